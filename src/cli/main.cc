// dak: command-line entry point. Errors from any command are printed as
// "dak: error: <what> / where / fix" and give exit code 1 (a well-formed value out of its range
// included); usage errors (unknown option, a value that its option's parser refuses) exit 2; an
// internal error (a bug) exits 3.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/mapped_file.h"

namespace {

/// The commands (as "dak generate", "dak bench gemm") below `app` that have the option `name`.
void commands_with_option(const CLI::App& app, const std::string& path, const std::string& name,
                          std::vector<std::string>& out) {
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    const std::string p = path + " " + sub->get_name();
    if (sub->get_option_no_throw(name) != nullptr) out.push_back(p);
    commands_with_option(*sub, p, name, out);
  }
}

/// Whether `command` has subcommands (`dak`, `dak bench`).
bool has_subcommands(const CLI::App& command) {
  return !command.get_subcommands([](const CLI::App*) { return true; }).empty();
}

/// Whether `command` takes positional arguments (`dak inspect MODEL`).
bool takes_arguments(const CLI::App& command) {
  return !command.get_options([](const CLI::Option* o) { return o->get_positional(); }).empty();
}

/// `s` with its first letter in lower case (CLI11's sentences start with a capital; dak's do not).
std::string lower_first(std::string s) {
  if (!s.empty() && s[0] >= 'A' && s[0] <= 'Z') s[0] = char(s[0] - 'A' + 'a');
  return s;
}

/// What dak takes instead of another engine's option that has no counterpart of the same meaning
/// (llama.cpp, vLLM, transformers); "" for other names.
std::string other_engine_hint(const std::string& name) {
  if (name == "--n-gpu-layers" || name == "--gpu-layers" || name == "-ngl")
    return "dak offloads bytes, not layers: dak generate, plan and bench take the HBM budget (--gpu-memory 40GiB), "
           "the host amount (--cpu-offload-gb 4) or the fraction on the host (--offload-ratio 0.3)";
  if (name == "--gpu-memory-utilization")
    return "dak's --gpu-memory is a size, not a fraction of the GPU (e.g. --gpu-memory 120GiB)";
  if (name == "--threads" || name == "-t" || name == "--threads-batch")
    return "the CPU path uses OpenMP: set OMP_NUM_THREADS (dak has no thread option; --temperature is the "
           "sampling temperature)";
  if (name == "--repeat-penalty" || name == "--repetition-penalty" || name == "--presence-penalty" ||
      name == "--frequency-penalty" || name == "--min-p")
    return "dak samples with --temperature, --top-k and --top-p only";
  if (name == "-np")  // llama.cpp's parallel sequences (it would parse as -n p)
    return "dak generate runs at most --max-batch sequences at once (vLLM's --max-num-seqs)";
  if (name == "--chat-template" || name == "--jinja" || name == "-cnv")
    return "--chat renders the model's own chat template (dak generate --help)";
  return "";
}

/// The long option of `app` closest to `name` ("--promt" -> "--prompt", "--temp" -> "--temperature"): another
/// engine's name for one of its options, else one within 2 edits.
std::string closest_option(const CLI::App& app, const std::string& name) {
  // Names other engines give the same setting (llama.cpp, vLLM, transformers), where `app` has it.
  static const std::pair<const char*, const char*> kOtherEngines[] = {
      {"--temp", "--temperature"},           {"--n-predict", "--max-new-tokens"},
      {"--predict", "--max-new-tokens"},     {"--max-tokens", "--max-new-tokens"},
      {"--ctx-size", "--max-context"},       {"--max-model-len", "--max-context"},
      {"--ctx-size", "--context"},           {"-c", "--max-context"},
      {"-c", "--context"},                   {"--system-prompt", "--system"},
      {"-sys", "--system"},                  {"--max-num-seqs", "--max-batch"},
      {"--max-batch-size", "--max-batch"},   {"--parallel", "--max-batch"},
      {"--n-parallel", "--max-batch"},       {"--max-seqs", "--max-batch"},
      {"--batch", "--max-batch"},            {"--max-batch", "--batch"},
      {"--file", "--prompt-file"},
  };
  for (const auto& [other, ours] : kOtherEngines) {
    if (name == other && app.get_option_no_throw(ours) != nullptr) return ours;
  }
  std::vector<std::string> long_names;
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& l : o->get_lnames()) long_names.push_back("--" + l);
  }
  return dak::cli::nearest_name(name, long_names);
}

/// The words CLI11 did not expect (`remaining`, in any order), in the order the user gave them.
std::vector<std::string> in_command_line_order(std::vector<std::string> remaining, int argc, char** argv) {
  std::vector<std::string> ordered;
  std::vector<bool> used(size_t(argc), false);
  for (int i = 1; i < argc; ++i) {
    for (auto it = remaining.begin(); it != remaining.end(); ++it) {
      if (*it == argv[i] && !used[size_t(i)]) {
        used[size_t(i)] = true;
        ordered.push_back(*it);
        remaining.erase(it);
        break;
      }
    }
  }
  ordered.insert(ordered.end(), remaining.begin(), remaining.end());  // not found as given: keep them
  return ordered;
}

/// A well-formed value out of its option's range (cli_common.h, OutOfRangeValue): reported like a
/// value the option's parser refuses, but with exit code 1.
class OutOfRangeError : public CLI::ValidationError {
 public:
  OutOfRangeError(const std::string& name, const std::string& msg, std::string fix)
      : CLI::ValidationError(name, msg), fix_(std::move(fix)) {}
  /// The option's allowed values as a fix ("use a count from 1 to 1000"); "" for none.
  const std::string& fix() const { return fix_; }

 private:
  std::string fix_;
};

/// The option (of `app` or a subcommand given on the command line) that has the validator `name`.
std::string option_with_validator(CLI::App& app, const std::string& name) {
  for (CLI::Option* o : app.get_options()) {
    try {
      o->get_validator(name);
      return o->get_name();
    } catch (const CLI::OptionNotFound&) {
    }
  }
  for (CLI::App* sub : app.get_subcommands()) {
    if (std::string found = option_with_validator(*sub, name); !found.empty()) return found;
  }
  return "";
}

/// The names of `app`'s subcommands in the order they were added, comma-separated ("generate,
/// inspect, ..."), for the fix line of a missing or unknown subcommand.
std::string subcommand_list(const CLI::App& app) {
  std::string list;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    list += (list.empty() ? "" : ", ") + sub->get_name();
  }
  return list;
}

/// "did you mean X? " for the subcommand of `app` within 2 edits of `word` (`generat`, `atention`), else "".
std::string closest_subcommand_hint(const CLI::App& app, const std::string& word) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) names.push_back(sub->get_name());
  const std::string best = dak::cli::nearest_name(word, names);
  return best.empty() ? "" : "did you mean " + best + "? ";
}

/// The refusal of `word` where a subcommand of `command` (its path "dak ...") belongs: a near miss
/// named, then the list.
dak::Error unknown_subcommand(const CLI::App& command, const std::string& path, const std::string& word) {
  const bool top = command.get_parent() == nullptr;
  return dak::Error("unknown subcommand '" + word + "'" + (top ? "" : " of " + path), top ? "the command line" : path,
                    closest_subcommand_hint(command, word) + "use one of " + subcommand_list(command) +
                        (top ? " (dak --help)" : ", or none (run `" + path + " --help` for what each does)"));
}

/// The deepest subcommand given on the command line that `app` parsed (`app` itself when none), and
/// its path ("dak bench attention") in `*path`.
const CLI::App& deepest_command(const CLI::App& app, std::string* path) {
  *path = "dak";
  const CLI::App* deepest = &app;
  for (const CLI::App* level = &app; level;) {
    const auto subs = level->get_subcommands();
    level = subs.empty() ? nullptr : subs.front();
    if (level) {
      deepest = level;
      *path += " " + level->get_name();
    }
  }
  return *deepest;
}

/// `e` with the command that ran named after a place that is one of its options ("--batch" ->
/// "--batch (dak plan)"), as CLI11's own value errors name it (trial 26: the two forms mixed).
dak::Error with_command(const dak::Error& e, const CLI::App& app) {
  const std::string& where = e.where_part();
  const bool option = where.size() > 2 && where.rfind("--", 0) == 0 &&
                      where.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-", 2) == std::string::npos;
  std::string path;
  if (!option || &deepest_command(app, &path) == &app) return e;
  return dak::Error(e.what_part(), where + " (" + path + ")", e.fix_part());
}

/// The `dak` app: once the whole command line has parsed (usage errors first: exit 2, a missing
/// input of run_required_input_checks included), and before any command runs, a value out of its
/// option's range is refused (exit 1).
class DakApp : public CLI::App {
 public:
  using CLI::App::App;

 protected:
  void pre_callback() override {
    dak::cli::run_required_input_checks();  // a missing input is a usage error (exit 2), refused first
    if (const std::optional<dak::cli::OutOfRangeValue> v = dak::cli::take_out_of_range_value()) {
      const std::string option = option_with_validator(*this, v->validator);
      throw OutOfRangeError(option.empty() ? "a value" : option, v->message, v->fix);
    }
  }
};

/// The option name in a command-line word: `--model` of `--model=x`, `-f` of `-fX` or `-f=x`.
std::string option_name(const std::string& word) {
  return word.size() > 1 && word[1] == '-' ? word.substr(0, word.find('=')) : word.substr(0, 2);
}

/// Whether option `o` (null: none) reads a value.
bool option_takes_value(const CLI::Option* o) { return o != nullptr && o->get_items_expected_min() > 0; }

/// The option `word` names (option_name) in `command` or any command below it, or null.
const CLI::Option* find_option_anywhere(const CLI::App& command, const std::string& word) {
  if (word.size() < 2 || word[0] != '-' || word == "--") return nullptr;
  if (const CLI::Option* o = command.get_option_no_throw(option_name(word))) return o;
  for (const CLI::App* sub : command.get_subcommands([](const CLI::App*) { return true; })) {
    if (const CLI::Option* o = find_option_anywhere(*sub, word)) return o;
  }
  return nullptr;
}

/// Whether `word` is an option, of some command, whose value is the next word: it takes a value and
/// `word` carries none (`--model` and `-f`, not `--model=x`, `-fx` or a flag).
bool takes_value_anywhere(const CLI::App& app, const std::string& word) {
  if (!option_takes_value(find_option_anywhere(app, word))) return false;
  return word[1] == '-' ? word.find('=') == std::string::npos : word.size() == 2;
}

/// Options given before the name of the command they belong to: `dak -f p.txt generate` (CLI11
/// parses the words before a command as its parent's, which lacks them) and `dak bench -b 64
/// attention` (the parent `dak bench` took --batch, and `dak bench attention` ran with its default,
/// silently; the trial of session 31). Returns the error, with the command line rewritten so that
/// the command's names come first, or nothing. -h / --help / --version keep their meaning, words
/// after `--` are not looked at, and the word after an option that takes a value is that value
/// (`dak -p inspect generate`: the prompt "inspect").
std::optional<std::string> options_before_command(const CLI::App& app, int argc, char** argv) {
  const CLI::App* command = &app;
  std::vector<int> names;  // argv indices of the command names, in order
  int first_misplaced = -1;  // the first option given while its command still had a subcommand to name
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--") break;
    if (word.size() > 1 && word[0] == '-') {
      const bool help = word == "-h" || word == "--help" || (command == &app && word == "--version");
      if (!help && first_misplaced < 0 && has_subcommands(*command)) {
        first_misplaced = i;
      }
      if (takes_value_anywhere(app, word)) ++i;  // its value
      continue;
    }
    const auto subs = command->get_subcommands([&](const CLI::App* sub) { return sub->get_name() == word; });
    if (subs.empty()) continue;
    command = subs.front();
    names.push_back(i);
  }
  // Misplaced only where a command's name follows the option.
  if (first_misplaced < 0 || names.empty() || names.back() < first_misplaced) return std::nullopt;
  std::string path = "dak";
  for (int n : names) path += std::string(" ") + argv[n];
  const std::string flag = option_name(argv[first_misplaced]);
  if (command->get_option_no_throw(flag) == nullptr) {  // moving it would not help (`bench -m x attention`)
    return dak::Error(flag + " is given before `" + path.substr(4) + "`, which has no such option", path,
                      "leave it out, or run `" + path + " --help` for the options it has")
        .what();
  }
  std::string rewritten = path;
  for (int j = 1; j < argc; ++j) {
    if (std::find(names.begin(), names.end(), j) != names.end()) continue;
    const std::string w = argv[j];
    // A short option written with '=' (`-n=2`, refused on its own) is given as `-n 2`.
    const bool short_equals =
        w.size() > 3 && w[0] == '-' && w[1] != '-' && w[2] == '=' && takes_value_anywhere(app, w.substr(0, 2));
    rewritten += " " + (short_equals ? w.substr(0, 2) + " " + dak::shell_word(w.substr(3)) : dak::shell_word(w));
  }
  return dak::Error(flag + " is given before `" + path.substr(4) + "`: a command's options follow its name", path,
                    "write `" + rewritten + "`")
      .what();
}

}  // namespace

int main(int argc, char** argv) {
  dak::cli::capture_stdout_errors();  // before anything is written: a failed write keeps its reason
  dak::install_mapped_file_fault_handler();  // a model file cut short while read: an error, not "Bus error"
  // `--system=` is the empty system message (`--system ''`), but CLI11 reads an empty inline value
  // as none and takes the next word (session 31's trial: `--system= --ignore-eos` made the system
  // message "--ignore-eos", silently): given to it as `--system ''`. Words after `--` stay.
  std::vector<std::string> words;
  bool after_dashdash = false;
  for (int i = 0; i < argc; ++i) {
    const std::string w = argv[i];
    after_dashdash = after_dashdash || (i > 0 && w == "--");
    if (!after_dashdash && i > 0 && w == "--system=") {
      words.push_back("--system");
      words.push_back("");
    } else {
      words.push_back(w);
    }
  }
  std::vector<char*> word_ptrs;
  for (std::string& w : words) word_ptrs.push_back(w.data());
  word_ptrs.push_back(nullptr);
  argc = int(words.size());
  argv = word_ptrs.data();
  DakApp app{"dak: LLM inference on one Hopper GPU with weights and KV cache read directly "
             "from host memory"};
  app.require_subcommand(1);
#ifdef DAK_HAVE_CUDA
  app.set_version_flag("--version", std::string("dak ") + DAK_VERSION + " (GPU layer built)");
#else
  app.set_version_flag("--version", std::string("dak ") + DAK_VERSION + " (CPU only: built without the GPU layer)");
#endif
  dak::cli::add_generate_command(app);
  dak::cli::add_inspect_command(app);
  dak::cli::add_perplexity_command(app);
  dak::cli::add_plan_command(app);
  dak::cli::add_bench_command(app);
  dak::cli::add_profile_command(app);
  try {
    // The subcommand named by the words before argv[i] (`dak bench attention ...`), and its path.
    const auto command_before = [&](int i, std::string* path) {
      const CLI::App* command = &app;
      *path = "dak";
      for (int j = 1; j < i && argv[j][0] != '-'; ++j) {
        const auto subs = command->get_subcommands([&](const CLI::App* sub) { return sub->get_name() == argv[j]; });
        if (subs.empty()) break;
        command = subs.front();
        *path += " " + command->get_name();
      }
      return command;
    };
    // An empty value ("--offload-ratio ''") would be taken by CLI11 as 0 or as not given, silently
    // (the session-8 trial: --offload-ratio '' forced 0 %); dak has no option whose value may be empty.
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      const bool empty_inline = arg.rfind("--", 0) == 0 && !arg.empty() && arg.back() == '=';
      const bool empty_next = arg.size() > 1 && arg[0] == '-' && i + 1 < argc && argv[i + 1][0] == '\0';
      // An empty system message is one (transformers renders it; it replaces a template's default one).
      const bool may_be_empty = arg == "--system" || arg == "--system=";
      if ((empty_inline || empty_next) && !may_be_empty) {
        const std::string name = empty_inline ? arg.substr(0, arg.size() - 1) : arg;
        // The command given (`dak bench attention`): its option says the fix (an option without a
        // default, as --prompt, cannot be left out).
        std::string path;
        const CLI::Option* option = command_before(i, &path)->get_option_no_throw(name);
        std::fprintf(stderr, "dak: error: %s\n",
                     dak::Error(name + " was given an empty value",
                                option ? name + " (" + path + ")" : "the command line",  // as other value errors
                                option ? dak::cli::empty_value_fix(*option, path)
                                       : "give a value, or leave the option out for its default")
                         .what());
        return 2;
      }
    }
    const auto known = app.get_subcommands([&](CLI::App* sub) { return argc >= 2 && sub->get_name() == argv[1]; });
    // `dak -- generate`: after `--` no word is a subcommand (CLI11 said only "a subcommand is required").
    if (argc >= 3 && std::string(argv[1]) == "--") {
      const auto named = app.get_subcommands([&](CLI::App* sub) { return sub->get_name() == argv[2]; });
      std::fprintf(stderr, "dak: error: %s\n",
                   dak::Error("`--` ends the options, so the words after it are arguments, not a subcommand",
                              "the command line",
                              named.empty() ? "start with one of " + subcommand_list(app) + " (dak --help)"
                                            : std::string("leave the -- out: dak ") + argv[2] + " ...")
                       .what());
      return 2;
    }
    if (argc >= 2 && argv[1][0] != '-' && known.empty()) {
      std::fprintf(stderr, "dak: error: %s\n", unknown_subcommand(app, "dak", argv[1]).what());
      return 2;
    }
    // llama.cpp's -ngl and -np would parse as -n gl / -n p ("'gl' is not a whole number"), and its -t
    // (threads) was taken as dak's temperature (trial 28b: -t 8 sampled garbage): say what dak takes
    // instead.
    // A word that is the value of the option before it (`-f -t`: a file named -t) is no flag.
    for (int i = 1; i < argc; ++i) {
      const std::string_view a = argv[i];
      if (i >= 2 && takes_value_anywhere(app, argv[i - 1])) continue;
      for (const char* flag : {"-ngl", "-t", "-np"}) {
        // `-t 4`, `-t=4` and llama.cpp's glued `-t4` (dak has no option -t to glue a value to).
        const bool glued_count = a.size() > std::strlen(flag) && a.starts_with(flag) &&
                                 std::isdigit(static_cast<unsigned char>(a[std::strlen(flag)]));
        if (a == flag || a.starts_with(std::string(flag) + "=") || glued_count) {
          std::fprintf(stderr, "dak: error: %s\n",
                       dak::Error(std::string("dak has no ") + flag, "the command line", other_engine_hint(flag)).what());
          return 2;
        }
      }
    }
    // -h / --help anywhere before `--` (not as an option's value) shows the help, as CLI11 does for a
    // line with an unknown option, before any check below (session 31's trial).
    bool help_asked = false;
    for (int i = 1; i < argc && std::string(argv[i]) != "--"; ++i) {
      const std::string w = argv[i];
      if ((w == "-h" || w == "--help") && !(i >= 2 && takes_value_anywhere(app, argv[i - 1]))) help_asked = true;
    }
    // It is the help of the command named, whatever else the line holds (`dak generate -n=2 --help`:
    // CLI11 checked -n's value first and refused it): the command's path and --help.
    if (help_asked) {
      std::vector<std::string> words{argv[0]};
      const CLI::App* command = &app;
      for (int i = 1; i < argc && std::string(argv[i]) != "--"; ++i) {
        if (argv[i][0] == '-' || (i >= 2 && takes_value_anywhere(app, argv[i - 1]))) continue;
        const auto subs = command->get_subcommands([&](const CLI::App* sub) { return sub->get_name() == argv[i]; });
        if (subs.empty() && has_subcommands(*command) && !takes_arguments(*command)) {
          // `dak bench atention --help`, `dak --help foo`: a misspelled subcommand, said as without --help.
          std::string path = "dak";
          for (size_t w = 1; w < words.size(); ++w) path += " " + words[w];
          std::fprintf(stderr, "dak: error: %s\n", unknown_subcommand(*command, path, argv[i]).what());
          return 2;
        }
        if (subs.empty()) continue;
        command = subs.front();
        words.push_back(argv[i]);
      }
      words.emplace_back("--help");
      std::vector<char*> help_argv;
      for (std::string& w : words) help_argv.push_back(w.data());
      app.parse(int(help_argv.size()), help_argv.data());  // throws CLI::CallForHelp: nothing below runs
    }
    // After `--` every word is an argument, and a command without positional arguments takes none:
    // all of them are refused here, listed in order. CLI11 still acted on -h / --help / --version
    // there (`dak generate -- --help` showed the help; session 32's trial) and took an option given
    // before `--` as the same option after it (`--batch 8 -- --batch 4`: "has no option --batch";
    // session 33's). `dak inspect -- --help` reads a model of that name.
    // (A `--` right after an option that takes a value is that value: `-f --` has its own check below.)
    char** dd = argv + argc;
    for (int i = 1; i < argc && dd == argv + argc; ++i) {
      if (std::string(argv[i]) == "--" && !(i >= 2 && takes_value_anywhere(app, argv[i - 1]))) dd = argv + i;
    }
    if (dd != argv + argc && dd + 1 != argv + argc) {
      std::string path;
      const CLI::App* command = command_before(int(dd - argv), &path);
      if (command != &app && !takes_arguments(*command)) {
        std::string words, fix;
        for (char** w = dd + 1; w != argv + argc; ++w) {
          const std::string word = *w;
          words += " " + dak::shell_word(word);
          if (!fix.empty()) continue;
          if (word == "-h" || word == "--help") fix = "put " + word + " before the --, or leave the -- out";
          if (word == "--version") fix = "--version is dak's own option: run `dak --version`";
        }
        if (fix.empty()) {
          fix = "leave the -- out: " + path + " takes no arguments after it" +
                (path == "dak generate" ? "; give a prompt with -p \"text\"" : "");
        }
        std::fprintf(stderr, "dak: error: %s\n",
                     dak::Error("the following argument" + std::string(dd + 2 == argv + argc ? " was" : "s were") +
                                    " not expected:" + words + " (after --, which ends the options)",
                                path, fix)
                         .what());
        return 2;
      }
    }
    // A short option with '=' (`-p=hi`, `-n=2`): CLI11 takes "=hi" as the value, a prompt that starts
    // with '=' or "'=2' is not a whole number" (the trial of session 31). -f has its own check below
    // (a file named "=x" may exist).
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "--") break;
      if (arg.size() < 3 || arg[0] != '-' || arg[1] == '-' || arg[2] != '=' || arg[1] == 'f') continue;
      if (i >= 2 && takes_value_anywhere(app, argv[i - 1])) continue;  // the value of the option before
      std::string path;
      const CLI::Option* o = command_before(i, &path)->get_option_no_throw(option_name(arg));
      if (!option_takes_value(o)) continue;
      const std::string value = arg.substr(3), flag = arg.substr(0, 2);
      std::fprintf(stderr, "dak: error: %s\n",
                   dak::Error(fmt::format("{} reads '={}' as its value: a short option keeps the '='", arg, value),
                              flag + " (" + path + ")",
                              // A value that starts with '-' is read as an option after a space: only the long form.
                              value.size() > 1 && value[0] == '-'
                                  ? fmt::format("give the value as {}={}", o->get_name(), dak::shell_word(value))
                                  : fmt::format("give the value after a space ({} {}) or as {}={}", flag,
                                                dak::shell_word(value), o->get_name(), dak::shell_word(value)))
                       .what());
      return 2;
    }
    if (const std::optional<std::string> misplaced = options_before_command(app, argc, argv)) {
      std::fprintf(stderr, "dak: error: %s\n", misplaced->c_str());
      return 2;
    }
    // A file option without its path (`-f -n 3`: CLI11 takes -n as the path, then fails on the stray
    // 3; `perplexity -f=x`, `--file=-c`, `-f-n`, `-f =x`; trials 29b and 30): said before parsing, where the command
    // has that option. `-` alone is standard input, words after `--` are no options, a name that
    // exists (a link too) is the user's file, and a -f that is the value of the option before it
    // (`-p -f`: the prompt text "-f") or that follows an option the command lacks (CLI11 names that
    // one) is no file option. A word before it that is itself a value (`--temperature -1 -f`) is no
    // option.
    const auto option_like = [](const std::string& word) {  // "-n", "--chat"; not "--", "-", "--x=y"
      return word.size() > 1 && word[0] == '-' && word != "--" && word.find('=') == std::string::npos;
    };
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "--") break;
      // -fVALUE (CLI11 reads VALUE as the path): `-f-n` is -f with the path "-n".
      const bool short_glued = arg.size() > 2 && arg.rfind("-f", 0) == 0 && arg[2] != '=';
      const size_t eq = arg.rfind("--", 0) == 0 ? arg.find('=')
                        : arg.rfind("-f=", 0) == 0 || short_glued ? 2
                                                                  : std::string::npos;
      const std::string flag = short_glued ? "-f" : arg.substr(0, eq);
      if (flag != "-f" && flag != "--prompt-file" && flag != "--file") continue;
      std::string path;
      const CLI::App* command = command_before(i, &path);
      const CLI::Option* file_option = command->get_option_no_throw(flag);
      if (file_option == nullptr) continue;
      if (i >= 2) {
        const std::string prev = argv[i - 1], before_prev = i >= 3 ? argv[i - 2] : "";
        const bool prev_is_value = option_like(before_prev) && option_takes_value(command->get_option_no_throw(before_prev));
        if (!prev_is_value && option_like(prev)) {
          const CLI::Option* before = command->get_option_no_throw(prev);
          if (before == nullptr || option_takes_value(before)) continue;
        }
      }
      const bool inline_value = eq != std::string::npos;
      if (!inline_value && i + 1 >= argc) continue;  // CLI11: "1 required FILE missing"
      const std::string value = short_glued ? arg.substr(2) : inline_value ? arg.substr(eq + 1) : argv[i + 1];
      const bool glued = inline_value && flag == "-f" && !short_glued;  // -f=x: CLI11 reads the path "=x"
      const bool equals_led = !inline_value && value.size() > 1 && value[0] == '=';  // `-f =x`: the path "=x"
      if (!glued && !equals_led && !(value.size() > 1 && value[0] == '-')) continue;
      std::error_code ec;
      const std::string as_read = glued ? "=" + value : value;
      if (std::filesystem::symlink_status(as_read, ec).type() != std::filesystem::file_type::not_found) continue;
      // The user's own path where the mistake is only the '=' (-f=x, -f =x), else a placeholder.
      const std::string example = (glued || equals_led) && value.size() > (equals_led ? 1u : 0u)
                                      ? dak::shell_word(equals_led ? value.substr(1) : value)
                                  : path == "dak perplexity" ? "text.txt"
                                                             : "prompt.txt";
      std::string what;
      if (glued) {
        what = fmt::format("{} reads '={}' as its path: -f=PATH keeps the '='", arg, value);
      } else if (equals_led) {
        what = fmt::format("{} {} reads '{}' as its path, which does not exist", flag, value, value);
      } else if (short_glued) {
        what = fmt::format("{} reads '{}' as its path: the path is missing", arg, value);
      } else if (inline_value) {
        what = fmt::format("{} gives {} as its file: the path is missing", arg, value);
      } else {
        what = fmt::format("{} is followed by {} where its file belongs: the path is missing", flag, value);
      }
      std::fprintf(stderr, "dak: error: %s\n",
                   dak::Error(what, flag + " (" + path + ")",
                              fmt::format("give the file after a space ({} {}) or as {}={}; - reads standard input",
                                          flag, example, file_option->get_name(), example))
                       .what());
      return 2;
    }
    // A text option (generate's -p / --prompt, --system) followed by one of the command's option names
    // (`-n 3 -p --chat`, `-p -n 2`, `--system --temperature 0.5`): the text is missing, and CLI11 would
    // take the option name as the text (trial 47: "--chat" was generated from without a word). A text
    // that is such a word is given as --prompt=WORD / --system=WORD.
    struct TextOption {
      const char* lname;
      const char* what;
      const char* example;
    };
    static constexpr TextOption kTextOptions[] = {{"prompt", "the prompt", "'Once upon a time'"},
                                                  {"system", "the system message", "'You are a helpful assistant.'"}};
    for (int i = 1; i + 1 < argc; ++i) {
      const std::string arg = argv[i], next = argv[i + 1];
      if (arg == "--") break;
      if (!option_like(arg)) continue;
      std::string path;
      const CLI::App* command = command_before(i, &path);
      const CLI::Option* text_option = command->get_option_no_throw(arg);
      // dak bench's -p is --prompt-len: a number, which CLI11 checks.
      const TextOption* text = nullptr;
      for (const TextOption& t : kTextOptions) {
        if (text_option != nullptr && text_option->check_lname(t.lname)) text = &t;
      }
      if (text == nullptr) continue;
      // This option is itself the value of the option before it (`--system -p -n 2`, `-f -p` with a
      // file named -p).
      if (i >= 2) {
        const std::string prev = argv[i - 1];
        if (option_like(prev) && option_takes_value(command->get_option_no_throw(prev))) continue;
      }
      // An option name, or a short option glued to its value (`-n3`, `-fx`; CLI11 reads -n3 as -n 3).
      const std::string name = next.substr(0, next.find('='));
      const bool named = option_like(name) && command->get_option_no_throw(name) != nullptr;
      const bool glued = next.size() > 2 && next[0] == '-' && next[1] != '-' &&
                         option_takes_value(command->get_option_no_throw(next.substr(0, 2)));
      // A text with whitespace that starts with '-' ("-n 3 apples are left", "-mild weather is"): it is
      // the text, but CLI11 would read it as an option (-n with the value " 3 apples ...", -m with
      // "ild ..."), so it reaches CLI11 as --prompt=TEXT (trial 48). Not an option of the command
      // given with '=' (`--system="Be brief"`), nor a file option glued to a file that exists
      // (`-f"my prompts.txt"`): those stay refused below as a missing text.
      std::error_code exists_ec;
      const bool glued_file = glued && (next.substr(0, 2) == "-f") &&
                              std::filesystem::exists(next.substr(2), exists_ec);
      if (!named && !glued_file && next.size() > 1 && next[0] == '-' &&
          next.find_first_of(" \t\n\r") != std::string::npos) {
        words[size_t(i)] = std::string("--") + text->lname + "=" + next;
        words.erase(words.begin() + i + 1);
        word_ptrs.clear();
        for (std::string& w : words) word_ptrs.push_back(w.data());
        word_ptrs.push_back(nullptr);
        argc = int(words.size());
        argv = word_ptrs.data();
        continue;
      }
      // A word shaped like an option that the command does not have (llama.cpp's -t, -cnv, -t4, --temp,
      // transformers' --top_k): most likely another tool's option, with the text left out (trial 47d).
      // Text such as "-5 degrees", "-" or "--" is never this shape: -{1,2}, a letter, then letters,
      // digits, '_' or '-' up to an optional '='.
      const auto option_shaped = [](const std::string& w) {
        const auto alpha = [](char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'); };
        const std::string head = w.substr(0, w.find('='));
        const size_t dashes = head.starts_with("--") ? 2 : head.starts_with("-") ? 1 : 0;
        if (dashes == 0 || head.size() <= dashes || !alpha(head[dashes])) return false;
        for (size_t k = dashes; k < head.size(); ++k) {
          const char ch = head[k];
          if (!alpha(ch) && ch != '-' && ch != '_' && !(ch >= '0' && ch <= '9')) return false;
        }
        return true;
      };
      const bool foreign = !named && !glued && option_shaped(next);
      if (!named && !glued && !foreign) continue;
      const std::string long_form = std::string("--") + text->lname;
      std::string what;
      std::string hint;  // for another tool's option: what dak takes instead, where known
      if (named) {
        what = fmt::format("{} is followed by the option {} where its text belongs: {} is missing", arg, next,
                           text->what);
      } else if (glued) {
        what = fmt::format("{} is followed by {}, which dak reads as the option {} with a value, where its text "
                           "belongs: {} is missing",
                           arg, next, next.substr(0, 2), text->what);
      } else {
        what = fmt::format("{} is followed by {}, which looks like an option ({} has no such option), where its "
                           "text belongs: {} is missing",
                           arg, next, path, text->what);
      }
      if (!named) {
        const std::string other = other_engine_hint(name);
        const std::string near = foreign ? closest_option(*command, name) : "";
        hint = other.empty() ? (near.empty() ? "" : fmt::format("; for {}, did you mean {}?", name, near))
                             : fmt::format("; for {}: {}", name, other);
      }
      std::fprintf(stderr, "dak: error: %s\n",
                   dak::Error(what, arg + " (" + path + ")",
                              fmt::format("give the text after {} ({} {}); a text that is the word {} itself is "
                                          "written {}={}{}",
                                          arg, arg, text->example, next, long_form, dak::shell_word(next), hint))
                       .what());
      return 2;
    }
    app.parse(argc, argv);
    // A full disk or a closed pipe behind stdout (e.g. `dak plan --output json > plan.json`) must not
    // leave a truncated file behind an exit code of 0 (the session-8 new-user trial).
    dak::cli::flush_stdout_or_fail();
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {  // --help, --version: their text must reach stdout too
      const int rc = app.exit(e);
      try {
        dak::cli::flush_stdout_or_fail();
      } catch (const dak::Error& err) {
        std::fprintf(stderr, "dak: error: %s\n", err.what());
        return 1;
      }
      return rc;
    }
    // A usage error, in dak's format (CLI11's own text had no where / fix and exit codes 104-114).
    std::string where = "the command line";
    std::string help = "dak --help";
    // The deepest subcommand given (`dak bench attention --bogus` -> dak bench attention --help).
    std::string path;
    const CLI::App* deepest = &deepest_command(app, &path);
    if (deepest != &app) {
      where = path;
      help = path + " --help";
    }
    std::string what = e.what();
    const bool required = dynamic_cast<const CLI::RequiredError*>(&e) != nullptr;
    if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr || required) {
      // CLI11 listed the words in reverse ("not expected: 4 --cpu-offload-gb", "France of capital").
      // Words before the command's name (`dak -f p.txt generate`) or after `--` are the top-level
      // app's extras, not the command's.
      std::vector<std::string> remaining = deepest->remaining();
      for (const CLI::App* up = deepest->get_parent(); remaining.empty() && up != nullptr; up = up->get_parent()) {
        remaining = up->remaining();
      }
      const std::vector<std::string> words = in_command_line_order(remaining, argc, argv);
      std::string option;
      char** const dashdash = std::find(argv + 1, argv + argc, std::string("--"));  // words after it are no options
      for (const std::string& w : words) {
        if (w.size() > 1 && w[0] == '-' && !(w[1] >= '0' && w[1] <= '9') && w[1] != '.' &&
            std::find(argv + 1, dashdash, w) != dashdash) {
          option = w.substr(0, w.find('='));
          break;
        }
      }
      // A word right after the name of a command that has subcommands and takes no arguments (`dak
      // bench foo`) is most likely a misspelled subcommand, named as `dak foo` is (the trial of session
      // 27), also before an option the command lacks (`dak bench attenton --quick` named --quick: the
      // trial of session 34); a stray word elsewhere (`dak bench --batch 1 8`) is a value list cut at
      // a space.
      char** const named = std::find(argv + 1, argv + argc, deepest->get_name());
      const bool right_after = !words.empty() && named + 1 < argv + argc && words.front() == named[1];
      const bool sub_word = right_after && !required && deepest != &app &&
                            std::isalpha(static_cast<unsigned char>(words.front()[0])) &&
                            has_subcommands(*deepest) && !takes_arguments(*deepest);
      if (sub_word) {
        std::fprintf(stderr, "dak: error: %s\n", unknown_subcommand(*deepest, path, words.front()).what());
        return 2;
      }
      if (!option.empty()) {  // an option this command does not have (its value, if any, was a stray word)
        std::vector<std::string> others;
        commands_with_option(app, "dak", option, others);
        std::string also;
        for (size_t i = 0; i < others.size() && i < 3; ++i) also += (i ? ", `" : "`") + others[i] + "`";
        if (others.size() > 3) also += fmt::format(" and {} more", others.size() - 3);
        const std::string near = closest_option(*deepest, option);
        std::string other = other_engine_hint(option);
        // --json / --csv where the report goes to stdout with --output, and the other way round (trial
        // of session 51: `dak plan --json x` was pointed at the bench commands).
        const auto has = [&](const char* name) { return deepest->get_option_no_throw(name) != nullptr; };
        const CLI::Option* output = deepest->get_option_no_throw("--output");
        const std::string format = option.size() > 2 ? option.substr(2) : option;
        if ((option == "--json" || option == "--csv") && output != nullptr &&
            output->get_description().find(format) != std::string::npos) {
          other = fmt::format("{} prints {} with --output {} (redirect it to a file: > out.{})", path, format, format,
                              format);
        } else if ((option == "--output" || option == "-o") && has("--json")) {
          other = path + " writes its report with --json FILE / --csv FILE (its table goes to stdout)";
        } else if (option == "-o" && output != nullptr) {  // --output without a short form here
          other = path + "'s --output has no short form: --output json";
        } else if ((option == "--json" || option == "--csv") && path == "dak profile") {
          other = "dak profile writes its JSON to --output FILE (-o FILE)";
        }
        // A misspelled required option surfaced as "--model is required" (the session-16 re-trial).
        const dak::Error err(
            path + " has no option " + option +
                (also.empty() ? "" : " (" + also + (others.size() > 1 ? " have it)" : " has it)")) +
                (required ? "; " + lower_first(what) : ""),
            path,
            (other.empty() ? "" : other + "; ") + (near.empty() ? "" : "did you mean " + near + "? ") + "run `" +
                help + "` for its options");
        std::fprintf(stderr, "dak: error: %s\n", err.what());
        return 2;
      }
      if (!words.empty() && !required) {
        what = "the following argument" + std::string(words.size() > 1 ? "s were" : " was") + " not expected:";
        for (const std::string& w : words) what += " " + w;
        // Words after `--` are no options (`dak generate -- -p hi`): say so.
        if (std::find(dashdash, argv + argc, words.front()) != argv + argc) what += " (after --, which ends the options)";
      }
    }
    // A value the option's own check refused reads "--flag: 'value' is ...": the flag is the place.
    if (const size_t colon = what.find(": "); what.rfind("--", 0) == 0 && colon != std::string::npos &&
                                              what.find_first_of(" =", 0) > colon) {
      where = what.substr(0, colon) + " (" + path + ")";
    }
    // "--file: At Most 1 required but received 2" (an option given twice).
    static const std::string kAtMost = ": At Most 1 required but received ";
    if (const size_t at = what.find(kAtMost); at != std::string::npos) {
      const std::string name = what.substr(0, at);
      std::string spellings;  // "-o is --output" (trial of session 51: `-o x --output json`)
      if (const CLI::Option* o = deepest->get_option_no_throw(name); o != nullptr) {
        for (const std::string& sn : o->get_snames()) spellings += (spellings.empty() ? "" : ", ") + ("-" + sn);
      }
      what = name + " was given " + what.substr(at + kAtMost.size()) + " times" +
             (spellings.empty() ? "" : " (" + spellings + " is " + name + ")") + "; give it once";
    }
    // Stray words after `dak generate` are most often an unquoted prompt (`-p The capital of France`);
    // elsewhere the value of some option was cut at a space, if anything.
    const bool stray = what.find("not expected") != std::string::npos && what.find(": -") == std::string::npos;
    const bool generate = where == "dak generate";
    const std::string quote = !stray ? ""
                              : generate ? "quote a prompt that contains spaces (-p \"two words\"; repeat -p for a batch), or "
                                         : "quote a value that contains spaces, or ";
    // "--weights-seed requires --random-weights": give both or neither.
    const bool requires_other = dynamic_cast<const CLI::RequiresError*>(&e) != nullptr;
    const bool subcommands = has_subcommands(*deepest);
    // A value out of its option's range: the fix gives the range (the second trial of session 24 met
    // "run --help" for `--cpu-offload-gb 1e400`).
    const auto* out_of_range = dynamic_cast<const OutOfRangeError*>(&e);
    // A value check's own advice ("'nan' is not a number; use a temperature from 0 (greedy) to 100")
    // and a value outside a list ("--device: gpu not in {cpu,cuda,auto}") give the fix line its
    // words (trial 26: the advice sat in the first line and the fix only said "run --help").
    std::string advice;
    if (const size_t in = what.rfind(" not in {"); in != std::string::npos && what.back() == '}') {
      std::string choices = what.substr(in + 9, what.size() - in - 10);
      std::replace(choices.begin(), choices.end(), ',', ' ');
      const size_t colon = what.find(": ");
      const size_t from = colon == std::string::npos || colon > in ? 0 : colon + 2;  // "--device: gpu not in"
      const std::string value = what.substr(from, in - from);
      advice = "use one of: " + choices + (value == "gpu" && choices.find("cuda") != std::string::npos
                                               ? " (cuda is the GPU)"
                                               : "");
    } else if (const size_t use = what.rfind("; use "); use != std::string::npos) {
      advice = what.substr(use + 2);
      what = what.substr(0, use);
    } else if (required && subcommands && deepest == &app) {  // bare `dak` (trial 26: no list)
      advice = "use one of " + subcommand_list(app);
    } else if (required && what == "--model is required") {  // dak plan: no default model, $DAK_MODEL unset
      advice = "pass --model CONFIG (e.g. --model llama-2-7b) or set DAK_MODEL";
    }
    // CLI11's own sentences start with a capital ("A subcommand is required"); dak's do not.
    if (what.size() > 1 && std::isupper(static_cast<unsigned char>(what[0])) &&
        (std::islower(static_cast<unsigned char>(what[1])) || what[1] == ' ')) {
      what[0] = char(std::tolower(static_cast<unsigned char>(what[0])));
    }
    // `-n --help`: the help flag became the option's value (session 32's trial); say so first.
    bool help_as_value = false;
    for (const char* v : {": '--help' ", ": '-h' ", ": --help not in {", ": -h not in {"}) {
      help_as_value = help_as_value || what.find(v) != std::string::npos;
    }
    const dak::Error err(what, where,
                         std::string(help_as_value ? "an option takes the word after it as its value, --help too: "
                                                     "give the value first, or put --help elsewhere; "
                                                   : "") +
                         (out_of_range && !out_of_range->fix().empty()
                             ? out_of_range->fix()
                             : quote + (requires_other ? "give the option it requires too, or drop it; " : "") +
                                   (advice.empty() ? "" : advice + ", or ") + "run `" + help + "` for " +
                                   (subcommands ? "the subcommands, options" : "its options") + " and their values"));
    std::fprintf(stderr, "dak: error: %s\n", err.what());
    return out_of_range != nullptr ? 1 : 2;
  } catch (const dak::UsageError& e) {  // text its option cannot parse (a list parser's refusal)
    std::fprintf(stderr, "dak: error: %s\n", with_command(e, app).what());
    return 2;
  } catch (const dak::cli::Interrupted& i) {  // Ctrl-C / SIGTERM: what was computed is printed
    // Ended by the signal itself (its default action), so that a shell running dak in a loop or a
    // script stops too, as it does for a process the signal killed; 128 + signal where that returns.
    std::cout.flush();
    std::fflush(nullptr);
    std::signal(i.signal, SIG_DFL);
    std::raise(i.signal);
    return 128 + i.signal;
  } catch (const dak::Error& e) {
    std::fprintf(stderr, "dak: error: %s\n", with_command(e, app).what());
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    // A path the code examined without an error code (a symbolic link loop, a folder without
    // permission): the user's input, not an internal error.
    std::fprintf(stderr, "dak: error: %s\n", dak::path_error(e.path1().string(), e.code()).what());
    return 1;
  } catch (const std::bad_alloc&) {  // memory no check before it foresaw (a limit, another process)
    std::fprintf(stderr, "dak: error: %s\n",
                 dak::Error("out of memory", "host memory",
                            "free memory or raise the process's limit (ulimit -v), or make the request smaller "
                            "(shorter or fewer prompts, fewer new tokens, a smaller --context or --max-context)")
                     .what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dak: internal error: %s\n", e.what());
    return 3;
  }
  return 0;
}
