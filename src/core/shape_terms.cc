#include "core/shape_terms.h"

#include "core/error.h"

#include <vector>

namespace dak {

std::string ShapeTerms::flags(unsigned dims) const {
  std::vector<std::string> names;
  if (command == Command::kGenerate) {
    if (dims & (kBatch | kPrompt)) names.push_back("the prompts");
    if (dims & kGen) names.push_back(max_context ? "--max-context" : "--max-new-tokens");
  } else {
    if (dims & kBatch) names.push_back("--batch");
    if (dims & kPrompt) names.push_back("--prompt-len");
    if (dims & kGen) names.push_back("--gen-len");
  }
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : " / ") + n;
  return out;
}

std::string ShapeTerms::lower(unsigned dims) const {
  std::vector<std::string> items;
  if (command == Command::kGenerate) {
    if ((dims & kBatch) && !(one_prompt && (dims & (kPrompt | kGen)))) items.push_back("fewer prompts at once (--max-batch)");
    if (max_context) {
      // The cache holds --max-context tokens a sequence, whatever the prompts and -n.
      if (dims & (kPrompt | kGen)) items.push_back("a smaller --max-context");
      return "give " + join_words(items, "or");
    }
    if (dims & kPrompt) items.push_back("a shorter prompt");
    if (dims & kGen) items.push_back("fewer new tokens (--max-new-tokens / -n)");
    return "give " + join_words(items, "or");
  }
  if (dims & kBatch) items.push_back("--batch");
  if (dims & kPrompt) items.push_back("--prompt-len");
  if (dims & kGen) items.push_back("--gen-len");
  return "lower " + join_words(items, "or");
}

}  // namespace dak
