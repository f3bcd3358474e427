// A kernel timeline for any CUDA program, CUDA graphs and programmatic dependent launch included,
// without Nsight Systems (which cannot make a report on the GPU machine: KINDS.md). A CUPTI
// injection library: the CUDA driver loads it at cuInit when CUDA_INJECTION64_PATH names it, and
// it records every kernel (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: GPU start / end timestamps in ns,
// the graph and graph node it ran from, the API call it belongs to) and writes them as CSV when
// the program exits:
//
//   CUDA_INJECTION64_PATH=build/libdak_timeline.so DAK_TIMELINE_OUT=t.csv build/dak bench ...
//   python3 tools/timeline/summarize.py t.csv
// (DAK_TIMELINE_OUT defaults to dak-timeline.csv in the working directory; the device scripts
// build into build-gpu/, tools/device/common.sh dak_timeline.)
//
// Columns: start_ns, end_ns (GPU clock), correlation (the launching API call: one cudaGraphLaunch
// for every kernel of a replay), graph_id, graph_node, grid, block, smem (dynamic, bytes), stream,
// name (demangled, template arguments kept). With PDL a kernel's start is when its first CTA was
// scheduled, which may be long before the previous kernel ended; its end is exact.
// Diagnostics only: not linked into dak; built by CMake as `dak_timeline` when CUPTI is found.
#include <cupti.h>
#include <cxxabi.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct Kernel {
  uint64_t start, end;
  uint32_t correlation, graph_id;
  uint64_t graph_node;
  int32_t grid, block, smem;
  uint32_t stream;
  std::string name;
};

std::mutex g_mutex;
std::vector<Kernel>* g_kernels = nullptr;  // leaked on purpose: written at exit
constexpr size_t kBufferBytes = 8 << 20;

void report(const char* what, CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  std::fprintf(stderr, "dak timeline: %s failed: %s\n", what, s ? s : "unknown CUPTI error");
}

std::string demangle(const char* name) {
  if (!name) return "?";
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && d ? d : name;
  std::free(d);
  for (char& c : out) {
    if (c == ',') c = ';';  // keep the CSV simple
  }
  return out;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = kBufferBytes;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  std::lock_guard<std::mutex> lock(g_mutex);
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && record->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
    g_kernels->push_back(Kernel{k->start, k->end, k->correlationId, k->graphId, k->graphNodeId, k->gridX, k->blockX,
                                k->dynamicSharedMemory, k->streamId, demangle(k->name)});
  }
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS && dropped > 0) {
    std::fprintf(stderr, "dak timeline: %zu records dropped\n", dropped);
  }
  std::free(buffer);
}

std::string out_path() {
  const char* path = std::getenv("DAK_TIMELINE_OUT");
  return path && *path ? path : "dak-timeline.csv";
}

void write_csv() {
  cuptiActivityFlushAll(1);
  const std::string out = out_path();
  std::FILE* f = std::fopen(out.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "dak timeline: cannot write %s: %s\n", out.c_str(), std::strerror(errno));
    return;
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  std::fprintf(f, "start_ns,end_ns,correlation,graph_id,graph_node,grid,block,smem,stream,name\n");
  for (const Kernel& k : *g_kernels) {
    std::fprintf(f, "%llu,%llu,%u,%u,%llu,%d,%d,%d,%u,%s\n", (unsigned long long)k.start, (unsigned long long)k.end,
                 k.correlation, k.graph_id, (unsigned long long)k.graph_node, k.grid, k.block, k.smem, k.stream,
                 k.name.c_str());
  }
  std::fclose(f);
  std::fprintf(stderr, "dak timeline: %zu kernels -> %s\n", g_kernels->size(), out.c_str());
}

}  // namespace

/// Entry point the CUDA driver calls once when CUDA_INJECTION64_PATH names this library. Returns
/// 1 on success; on an unwritable DAK_TIMELINE_OUT or a CUPTI error it prints it and returns 0 (the
/// program runs untraced).
extern "C" int InitializeInjection() {
  // The output must be writable before the run, not found out at its end ("a": nothing truncated yet).
  if (std::FILE* f = std::fopen(out_path().c_str(), "a")) {
    std::fclose(f);
  } else {
    std::fprintf(stderr, "dak timeline: cannot write %s: %s; tracing is off (set DAK_TIMELINE_OUT to a writable path)\n",
                 out_path().c_str(), std::strerror(errno));
    return 0;
  }
  g_kernels = new std::vector<Kernel>();
  g_kernels->reserve(1 << 20);
  CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  if (r != CUPTI_SUCCESS) return report("cuptiActivityRegisterCallbacks", r), 0;
  r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r != CUPTI_SUCCESS) return report("cuptiActivityEnable(CONCURRENT_KERNEL)", r), 0;
  std::atexit(write_csv);
  return 1;
}
