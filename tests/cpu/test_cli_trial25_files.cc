// The 25th new-user trial's findings on files, paths and error text: an unreadable --file of dak
// perplexity, a --model path that does not exist, the part of an oversized text the CPU path can
// score, a tokenizer.json whose vocabulary gives one id to two tokens, the file an unsupported chat
// template came from, a tokenizer.json that is a folder, bytes of a path that are not UTF-8 in an
// error, and docs that cited files outside the repository.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli_test_util.h"
#include "core/bpe_tokenizer.h"
#include "core/config_locator.h"
#include "core/cpu_model.h"
#include "core/error.h"
#include "core/generate.h"
#include "core/gguf.h"
#include "core/model_config.h"
#include "core/pretokenizer.h"
#include "core/tokenizer.h"
#include "core/utf8_text.h"

namespace {

namespace fs = std::filesystem;
using dak::testing::RunResult;
using dak::testing::run_shell;

const std::string kDak = DAK_BINARY;
const std::string kData = DAK_TEST_DATA_DIR;
const std::string kTiny = kData + "/hf_parity/llama_gqa";  // vocab_size 128, no tokenizer

RunResult run_dak(const std::string& args) { return dak::testing::run_dak_env("", args); }

using dak::testing::contains;

/// A fresh folder under the test's temporary directory, readable by every user.
fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / (name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                           fs::perms::others_read | fs::perms::others_exec);
  return dir;
}

/// A model folder with the tiny model's config and weights (vocab_size 128) and a byte-level BPE
/// tokenizer.json: the first 128 byte characters as ids 0 to 127, or `vocab` (token -> id) when given,
/// and `merges`.
fs::path tiny_model_with_tokenizer(const std::string& name, nlohmann::json vocab = nullptr,
                                   nlohmann::json merges = nlohmann::json::array()) {
  const fs::path dir = fresh_dir(name);
  fs::copy_file(fs::path(kTiny) / "config.json", dir / "config.json");
  fs::create_symlink(fs::absolute(fs::path(kTiny) / "model.safetensors"), dir / "model.safetensors");
  if (vocab.is_null()) {
    vocab = nlohmann::json::object();
    const auto& alpha = dak::byte_level_alphabet();
    for (int b = 0; b < 128; ++b) vocab[alpha[b]] = b;
  }
  const nlohmann::json j = {
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
  };
  std::ofstream(dir / "tokenizer.json") << j.dump();
  std::ofstream(dir / "text.txt") << "abcabcab";
  return dir;
}

// ---------------------------------------------------------------- 1. unreadable --file

TEST(CliTrial25Files, PerplexityNamesAnUnreadableFileAsEveryCommandDoes) {
  // The trial: "fix: give yourself read permission on the file (chmod u+r)", which a user who does
  // not own the file cannot do; and a folder on the way that may not be entered was "no such file".
  // Root may read anything, so as root dak runs as nobody (runuser), as the other permission tests do.
  std::string as;
  if (::geteuid() == 0) {
    if (std::system("command -v runuser >/dev/null 2>&1 && id nobody >/dev/null 2>&1") != 0)
      GTEST_SKIP() << "running as root without runuser or a 'nobody' user: no one to lack a permission";
    as = "runuser -u nobody -- ";
  }
  if (run_shell(as + kDak + " --version >/dev/null 2>&1").exit_code != 0)
    GTEST_SKIP() << "the dak binary cannot be run as " << (as.empty() ? "this user" : "nobody");
  const fs::path dir = fresh_dir("dak_ppl_unreadable");
  const fs::path file = dir / "np.txt", blocked = dir / "blocked";
  std::ofstream(file) << "some text";
  fs::permissions(file, fs::perms::none);
  fs::create_directory(blocked);
  std::ofstream(blocked / "in.txt") << "some text";
  fs::permissions(blocked, fs::perms::none);
  const std::string ppl = as + kDak + " perplexity --device cpu --model " + kTiny + " --file ";

  RunResult r = run_shell(ppl + file.string() + " 2>&1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.output, "dak: error: this user may not read the file '" + file.string() + "' (Permission denied)\n"
                      "  where: " + file.string() + "\n"
                      "  fix:   give the user read permission on the file (e.g. chmod a+r " + file.string() +
                      ", as its owner or root), or run dak as a user who may read it\n");
  EXPECT_FALSE(contains(r.output, "u+r")) << r.output;

  r = run_shell(ppl + (blocked / "in.txt").string() + " 2>&1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "dak: error: this user may not enter the folder '" + blocked.string() +
                                     "' (Permission denied), so dak cannot reach " + (blocked / "in.txt").string() +
                                     "\n  where: " + blocked.string() + "\n  fix:   give the user search and read "
                                     "permission on the folder (e.g. chmod a+rx " + blocked.string()))
      << r.output;
  EXPECT_FALSE(contains(r.output, "no such file")) << r.output;
  fs::permissions(blocked, fs::perms::owner_all);
  fs::remove_all(dir);
}

// ---------------------------------------------------------------- 2. a --model path to nothing

TEST(CliTrial25Files, PlanSaysAModelPathDoesNotExist) {
  // docs/planner.md's `--model configs/opt-30b.json` works only from the source tree's root; elsewhere
  // it was "'configs/opt-30b.json' is neither a config.json, a model folder, nor a shipped config".
  RunResult r = run_shell("cd / && " + kDak + " plan --model configs/opt-30b.json 2>&1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.output,
            "dak: error: no such file or folder: 'configs/opt-30b.json' (relative to the working directory /)\n"
            "  where: --model (dak plan)\n"
            "  fix:   give the shipped config's name instead, which works from any folder: --model opt-30b (or "
            "check the path)\n");
  // The fix, followed, works from there.
  EXPECT_EQ(run_shell("cd / && " + kDak + " plan --model opt-30b >/dev/null 2>&1").exit_code, 0);
  // Any other path to nothing: said so, with the shipped names.
  const std::string none = (fs::path(::testing::TempDir()) / "dak_no_such_dir" / "none.json").string();
  r = run_dak("plan --model " + none);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "dak: error: no such file or folder: '" + none + "'\n  where: --model (dak plan)\n  fix:   "
                                 "check the path, or give the name of a shipped config (from " +
                                     dak::shipped_configs_dir().string() + "): "))
      << r.output;
  EXPECT_TRUE(contains(r.output, "llama-2-7b")) << r.output;
  EXPECT_FALSE(contains(r.output, "is neither")) << r.output;
  // A dangling symbolic link names its target (session 46's trial: only "no such file").
  const fs::path link = fs::path(::testing::TempDir()) / "dak_dangling_model_link";
  std::error_code ec;
  fs::remove(link, ec);
  fs::create_symlink(fs::path(::testing::TempDir()) / "dak_no_such_model", link);
  r = run_dak("plan --model " + link.string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "no such file or folder: '" + link.string() + "' (a symbolic link to '" +
                                     (fs::path(::testing::TempDir()) / "dak_no_such_model").string() +
                                     "', which does not exist)"))
      << r.output;
  fs::remove(link, ec);
  // Named for the option that took it.
  r = run_dak("bench attention --models /nonexistent/llama-2-7b.json");
  EXPECT_TRUE(contains(r.output, "no such file or folder: '/nonexistent/llama-2-7b.json'\n  where: --models (dak bench attention)\n  "
                                 "fix:   give the shipped config's name instead, which works from any folder: "
                                 "--models llama-2-7b"))
      << r.output;
  // A bare name that is no shipped config keeps its message (it may be a misspelt name).
  r = run_dak("plan --model no-such-model");
  EXPECT_TRUE(contains(r.output, "'no-such-model' is neither a config.json, a model folder, nor a shipped config"))
      << r.output;
  // A DAK_CONFIGS_DIR that does not exist is named as the reason there are no names to offer
  // (session 34's trial read "(none found)").
  r = dak::testing::run_dak_env("DAK_CONFIGS_DIR=/nonexistent/dak-configs", "plan --model llama-2-7b");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "the folder does not exist; DAK_CONFIGS_DIR names it")) << r.output;
}

/// The text of README.md and of every docs/*.md, by path.
std::vector<std::pair<fs::path, std::string>> user_docs() {
  const fs::path root = DAK_SOURCE_DIR;
  std::vector<fs::path> paths = {root / "README.md"};
  for (const auto& e : fs::directory_iterator(root / "docs"))
    if (e.path().extension() == ".md") paths.push_back(e.path());
  std::vector<std::pair<fs::path, std::string>> docs;
  for (const fs::path& p : paths) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    docs.emplace_back(p, ss.str());
  }
  return docs;
}

TEST(CliTrial25Files, DocsExamplesGiveShippedConfigsByName) {
  // `dak plan --model configs/opt-30b.json` (docs/planner.md) worked from the source tree's root only.
  const auto docs = user_docs();
  ASSERT_GT(docs.size(), 5u);
  const std::regex config_path(R"(--models? +configs/)");
  for (const auto& [path, text] : docs) {
    EXPECT_FALSE(std::regex_search(text, config_path)) << path << " passes a configs/ path to --model";
  }
}

// ---------------------------------------------------------------- 3. the part of an oversized text

TEST(CliTrial25Files, OversizedPerplexityInputOnTheCpuSuggestsAPartTheCpuCanScore) {
  // The trial: on the CPU path the fix said to score the first 32 MiB, and following it dak then
  // announced about 97 hours and suggested 4 KiB. Now the fix gives the notice's part on the CPU.
  EXPECT_EQ(dak::kCpuPerplexityPartBytes, 4096);
  const fs::path dir = fresh_dir("dak_ppl_cpu_part");
  const fs::path big = dir / "big.txt";
  std::ofstream(big).put('x');
  fs::resize_file(big, uint64_t(65) << 20);  // sparse: no disk used
  const std::string cpu_fix =
      "  fix:   score a part small enough for the CPU reference path (--device cpu), e.g. its first 4 KiB (iconv -c "
      "drops a character cut at the end): head -c 4K " + big.string() + " | iconv -c -f UTF-8 -t UTF-8 | dak "
      "perplexity --file - --model " + kTiny + " --device cpu; dak estimates the time of a longer part before scoring "
      "it\n";
  RunResult r = run_dak("perplexity --device cpu --model " + kTiny + " --file " + big.string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.output, "dak: error: the text file is 65.00 MiB, more than the 64.00 MiB dak perplexity reads\n"
                      "  where: " + big.string() + "\n" + cpu_fix);
  // Standard input alike.
  r = run_shell("head -c 67108865 /dev/zero | " + kDak + " perplexity --device cpu --model " + kTiny +
                " --file - 2>&1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "  fix:   pipe a part small enough for the CPU reference path (--device cpu), e.g. "
                                 "its first 4 KiB (iconv -c drops a character cut at the end): ... | head -c 4K | "
                                 "iconv -c -f UTF-8 -t UTF-8 | dak perplexity --file - --model " + kTiny +
                                     " --device cpu; dak estimates"))
      << r.output;
  // --device auto on a machine without a usable GPU runs on the CPU too.
  if (contains(run_shell(kDak + " --version").output, "CPU only")) {
    r = run_dak("perplexity --model " + kTiny + " --file " + big.string());
    EXPECT_TRUE(contains(r.output, "  fix:   score a part small enough for the CPU reference path (no usable GPU "
                                   "here), e.g. its first 4 KiB (iconv -c drops a character cut at the end): head -c "
                                   "4K " + big.string() + " | iconv -c -f UTF-8 -t UTF-8 | dak perplexity --file - "
                                   "--model " + kTiny + ";"))
        << r.output;
  }
  // On a GPU (--device cuda: the size is refused before the GPU is looked for): 32 MiB, as before.
  r = run_dak("perplexity --device cuda --model " + kTiny + " --context 64 --file " + big.string());
  EXPECT_TRUE(contains(r.output, "  fix:   score a part of it, e.g. its first 32 MiB (iconv -c drops a character cut "
                                 "at the end): head -c 32M " + big.string() + " | iconv -c -f UTF-8 -t UTF-8 | dak "
                                 "perplexity --file - --model " + kTiny + " --device cuda --context 64 (or split it "
                                 "with split -C 32M and score each part)\n"))
      << r.output;
  // The fix's command, followed, reads the part (here: the first 4 KiB, through a shell).
  r = run_shell("head -c 4K " + big.string() + " | wc -c");
  EXPECT_EQ(r.output.substr(0, r.output.find_first_not_of("0123456789 ")), "4096") << r.output;
  fs::remove_all(dir);
}

TEST(CliTrial25Files, TheLongCpuPerplexityNoticeSuggestsTheSamePart) {
  const nlohmann::json j = {{"model_type", "llama"},     {"hidden_size", 576},          {"intermediate_size", 1536},
                            {"num_hidden_layers", 30},   {"num_attention_heads", 9},    {"num_key_value_heads", 3},
                            {"vocab_size", 49152},       {"max_position_embeddings", 8192},
                            {"tie_word_embeddings", true}, {"rope_theta", 100000}};  // SmolLM2-135M
  const dak::ModelConfig c = dak::ModelConfig::from_hf_json(j, "config.json");
  const std::string cmd = dak::perplexity_part_command(dak::kCpuPerplexityPartBytes, "big.txt", " --device cpu");
  EXPECT_EQ(cmd, "head -c 4K big.txt | iconv -c -f UTF-8 -t UTF-8 | dak perplexity --file - --device cpu");
  EXPECT_EQ(dak::perplexity_part_command(dak::kGpuPerplexityPartBytes, ""),
            "... | head -c 32M | iconv -c -f UTF-8 -t UTF-8 | dak perplexity --file -");
  const std::string notice = dak::long_cpu_perplexity_notice(c, 99999999, 8192, 2, {}, cmd);
  EXPECT_TRUE(contains(notice, "or score a shorter text (e.g. its first 4 KiB: " + cmd + ")")) << notice;
  EXPECT_TRUE(contains(dak::long_cpu_perplexity_notice(c, 99999999, 8192, 2),
                       "(e.g. its first 4 KiB: head -c 4K FILE | iconv -c -f UTF-8 -t UTF-8 | dak perplexity --file -)"));
}

// ---------------------------------------------------------------- 4. two tokens with one id

TEST(CliTrial25Files, ADuplicateVocabularyIdNamesBothTokens) {
  // The trial gave "t" the id 101 of "u" and got "merge 'Ġ t' references token 't', which is not in
  // the vocabulary": the wrong problem. (Here the ids of the 128-character alphabet: 't' is 116.)
  nlohmann::json vocab = nlohmann::json::object();
  const auto& alpha = dak::byte_level_alphabet();
  for (int b = 0; b < 128; ++b) vocab[alpha[b]] = b;
  vocab["t"] = 117;  // the id of "u"
  const fs::path dir = tiny_model_with_tokenizer("dak_dup_id", vocab, {alpha[' '] + " t"});
  const RunResult r = run_dak("generate --device cpu --model " + dir.string() + " -p ab -n 1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "dak: error: the tokens 't' and 'u' both have the id 117 (each token needs an id "
                                 "of its own)\n  where: " + (dir / "tokenizer.json").string() +
                                     ": model.vocab[\"u\"]\n  fix:   restore the tokenizer files from the model's "
                                     "repository\n"))
      << r.output;
  EXPECT_FALSE(contains(r.output, "merge")) << r.output;
  fs::remove_all(dir);
}

// ---------------------------------------------------------------- 5. where a chat template came from

TEST(CliTrial25Files, AnUnsupportedChatTemplateNamesTheFileItCameFrom) {
  // The trial: a template from chat_template.jinja was placed at "chat template
  // (tokenizer.chat_template / tokenizer_config.json)", with no word of why dak cannot render it.
  const fs::path dir = tiny_model_with_tokenizer("dak_chat_jinja");
  std::ofstream(dir / "chat_template.jinja") << "{% for m in messages %}### {{ m['content'] }}{% endfor %}";
  RunResult r = run_dak("generate --device cpu --model " + dir.string() + " --chat -p hi -n 1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "dak: error: dak cannot render this chat template (it renders ChatML, Llama-2, "
                                 "Llama-3 and Mistral templates, having no Jinja engine): it has none of the markers of "
                                 "the templates dak renders: <|im_start|> (ChatML), <|start_header_id|> (Llama-3), "
                                 "[INST] (Llama-2 with <<SYS>>, else Mistral)\n  where: " +
                                     (dir / "chat_template.jinja").string() + "\n  fix:   drop --chat"))
      << r.output;
  // tokenizer_config.json's chat_template comes first: named as that file and field.
  std::ofstream(dir / "tokenizer_config.json") << R"({"chat_template": "{{ '### ' + messages[0]['content'] }}"})";
  r = run_dak("generate --device cpu --model " + dir.string() + " --chat -p hi -n 1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "(Llama-2 with <<SYS>>, else Mistral)\n  where: " +
                                     (dir / "tokenizer_config.json").string() + ": chat_template\n"))
      << r.output;
  fs::remove_all(dir);
}

/// A GGUF image (version 3, no tensors) whose metadata is a byte-level BPE tokenizer of the 256
/// alphabet characters, no merges, and the chat template `tmpl`.
std::string gguf_with_chat_template(const std::string& tmpl) {
  std::string g = "GGUF";
  auto u32 = [&](uint32_t v) { g.append(reinterpret_cast<const char*>(&v), 4); };
  auto u64 = [&](uint64_t v) { g.append(reinterpret_cast<const char*>(&v), 8); };
  auto str = [&](const std::string& s) { u64(s.size()), g += s; };
  constexpr uint32_t kString = 8, kArray = 9;
  u32(3);
  u64(0);  // tensors
  u64(4);  // metadata entries
  str("tokenizer.ggml.model"), u32(kString), str("gpt2");
  str("tokenizer.ggml.tokens"), u32(kArray), u32(kString), u64(256);
  for (const std::string& t : dak::byte_level_alphabet()) str(t);
  str("tokenizer.ggml.merges"), u32(kArray), u32(kString), u64(0);
  str("tokenizer.chat_template"), u32(kString), str(tmpl);
  return g;
}

TEST(CliTrial25Files, AnUnsupportedChatTemplateFromGgufMetadataIsNamedSo) {
  const std::string image = gguf_with_chat_template("{{ messages }}");
  const auto gguf = dak::GgufFile::parse(reinterpret_cast<const uint8_t*>(image.data()), image.size(), "m.gguf");
  const auto tok = dak::load_gguf_tokenizer(*gguf);
  EXPECT_EQ(tok->chat_template_source(), "m.gguf: metadata tokenizer.chat_template");
  const std::vector<dak::ChatMessage> msgs = {{"user", "hi"}};
  try {
    tok->apply_chat_template(msgs);
    ADD_FAILURE() << "no error";
  } catch (const dak::Error& e) {
    EXPECT_EQ(e.where_part(), "m.gguf: metadata tokenizer.chat_template");
    EXPECT_TRUE(contains(e.what_part(), "dak cannot render this chat template")) << e.what();
  }
}

// ---------------------------------------------------------------- 6. a tokenizer.json that is a folder

TEST(CliTrial25Files, ATokenizerFileThatIsAFolderIsNamedSo) {
  // Was "the model folder has no tokenizer (neither tokenizer.json nor tokenizer.model)"; config.json
  // already got "config.json is not a regular file (a folder?)".
  for (const std::string name : {"tokenizer.json", "tokenizer.model"}) {
    const fs::path dir = tiny_model_with_tokenizer("dak_tok_folder");
    fs::remove(dir / "tokenizer.json");
    fs::create_directory(dir / name);
    const RunResult r = run_dak("generate --device cpu --model " + dir.string() + " -p ab -n 1");
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_EQ(r.output, "dak: error: " + name + " is not a regular file (a folder)\n  where: " + (dir / name).string() +
                            "\n  fix:   replace it with the model's " + name + " from its repository, or pass the prompt "
                            "as token ids with --prompt-ids, which works without a tokenizer\n");
    // Following the fix runs, and says why the output is ids (the reason -p was refused).
    const RunResult ids = run_dak("generate --device cpu --model " + dir.string() + " --prompt-ids 1,2 -n 1");
    EXPECT_EQ(ids.exit_code, 0) << ids.output;
    EXPECT_NE(ids.output.find("the output is shown as token ids, since the model's tokenizer cannot be used: " + name +
                              " is not a regular file (a folder)"),
              std::string::npos)
        << ids.output;
    fs::remove_all(dir);
  }
}

// ---------------------------------------------------------------- 7. bytes that are not UTF-8

TEST(CliTrial25Files, ErrorsShowBytesThatAreNotUtf8AsEscapes) {
  // The trial: `where: /tmp/t25/x<0xff>` made grep call stderr binary.
  const dak::Error e("bad '\xff' and '\xe4\xb8'", "/tmp/x\xff", "caf\xc3\xa9 \xf0\x9f\x98\x80 stays");
  EXPECT_EQ(std::string(e.what()), "bad '\\xff' and '\\xe4\\xb8'\n  where: /tmp/x\\xff\n  fix:   caf\xc3\xa9 "
                                   "\xf0\x9f\x98\x80 stays");
  // Control bytes as before, and escapes are not escaped again when an error is rethrown with its parts.
  const dak::Error again(e.what_part() + "\n", e.where_part(), e.fix_part());
  EXPECT_EQ(again.what_part(), "bad '\\xff' and '\\xe4\\xb8'\\x0a");
  // A fix's command names such a path with $'...', which the shell turns back into the bytes.
  EXPECT_EQ(dak::shell_word("/tmp/x\xff.txt"), "$'/tmp/x\\xff.txt'");
  EXPECT_EQ(dak::shell_word("a b\n'\\"), "$'a b\\x0a\\'\\\\'");
  EXPECT_EQ(dak::shell_word("/tmp/my model"), "'/tmp/my model'");  // valid UTF-8: single quotes as before

  const fs::path dir = fresh_dir("dak_not_utf8");
  const std::string x = (dir / "x").string();
  // From the command line (a missing file).
  RunResult r = run_shell(kDak + " perplexity --device cpu --model " + kTiny + " --file \"$(printf '" + x +
                          "\\377')\" 2>&1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.output, "dak: error: no such file\n  where: " + x + "\\xff\n  fix:   check the path passed to --file\n");
  EXPECT_FALSE(dak::find_invalid_utf8(r.output).has_value()) << r.output;
  // In a fix line: the command works when pasted into bash.
  const std::string big = x + "\xff.txt";
  std::ofstream(big).put('x');
  fs::resize_file(big, uint64_t(65) << 20);
  r = run_shell(kDak + " perplexity --device cuda --model " + kTiny + " --file \"$(printf '" + x +
                "\\377.txt')\" 2>&1");
  EXPECT_FALSE(dak::find_invalid_utf8(r.output).has_value()) << r.output;
  const std::string head = "head -c 32M $'" + x + "\\xff.txt'";
  EXPECT_TRUE(contains(r.output, "  fix:   score a part of it, e.g. its first 32 MiB (iconv -c drops a character cut "
                                 "at the end): " + head + " | iconv"))
      << r.output;
  std::ofstream(dir / "cmd.sh") << head << " | wc -c\n";
  r = run_shell("bash " + (dir / "cmd.sh").string());
  EXPECT_EQ(r.output, "33554432\n") << r.output;
  fs::remove_all(dir);
}

// ---------------------------------------------------------------- 8. files outside the repository

TEST(CliTrial25Files, DocsCiteOnlyFilesInTheRepository) {
  // The docs sent the reader to DESIGN.md and ../shared/tools/h200_probe, the team's notes and tools
  // outside this repository.
  const auto docs = user_docs();
  ASSERT_GT(docs.size(), 5u);
  for (const auto& [path, text] : docs) {
    EXPECT_FALSE(contains(text, "DESIGN.md")) << path << " cites DESIGN.md";
    EXPECT_FALSE(contains(text, "../shared/")) << path << " cites ../shared/";
    EXPECT_FALSE(contains(text, "and the design notes")) << path;
  }
}

}  // namespace
