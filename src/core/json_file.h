// Parsing of user-supplied JSON files (config.json, hardware profiles, plans) with errors that say
// where the syntax breaks.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace dak {

/// Parses `text`, the contents of the JSON file `path` (`what` names it in messages, e.g.
/// "hardware profile"). Throws dak::Error on a syntax error: "<what> is not valid JSON: line L,
/// column C: <the parser's message>", located at `path`, with `fix` as the remedy.
nlohmann::json parse_json_text(const std::string& text, const std::string& what, const std::string& path,
                               const std::string& fix);

}  // namespace dak
