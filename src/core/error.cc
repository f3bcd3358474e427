#include "core/error.h"

namespace dak {

namespace {
std::string compose(const std::string& what, const std::string& where, const std::string& fix) {
  std::string s = what;
  if (!where.empty()) s += "\n  where: " + where;
  if (!fix.empty()) s += "\n  fix:   " + fix;
  return s;
}
}  // namespace

Error::Error(std::string what, std::string where, std::string fix)
    : std::runtime_error(compose(what, where, fix)),
      what_(std::move(what)),
      where_(std::move(where)),
      fix_(std::move(fix)) {}

void fail(std::string what, std::string where, std::string fix) {
  throw Error(std::move(what), std::move(where), std::move(fix));
}

}  // namespace dak
