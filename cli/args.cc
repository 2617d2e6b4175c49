#include "cli/args.h"

#include <cstdlib>
#include <stdexcept>

namespace swan::cli {

std::string Args::CommandLine() const {
  std::string out;
  for (const std::string& w : words_) out += (out.empty() ? "" : " ") + w;
  return out;
}

Args::Args(const std::vector<std::string>& words, const std::set<std::string>& bool_flags) : words_(words) {
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w.size() < 2 || w[0] != '-' || (w[1] >= '0' && w[1] <= '9')) {
      positional_.push_back(w);
      continue;
    }
    const size_t eq = w.find('=');
    if (eq != std::string::npos) {
      values_[w.substr(0, eq)] = w.substr(eq + 1);
    } else if (bool_flags.count(w)) {
      values_[w] = "1";
    } else if (i + 1 < words.size()) {
      values_[w] = words[++i];
    } else {
      throw std::invalid_argument("flag " + w + " needs a value");
    }
  }
}

bool Args::Has(const std::string& name) const { return values_.count(name) > 0; }

std::string Args::Get(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

long long Args::GetInt(const std::string& name, long long fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  char* end = nullptr;
  const long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (it->second.empty() || *end != '\0')
    throw std::invalid_argument(name + " expects an integer, got '" + it->second + "'");
  return v;
}

long long Args::GetPositiveInt(const std::string& name, long long fallback) const {
  if (!Has(name)) return fallback;
  const long long v = GetInt(name, fallback);
  if (v < 1) throw std::invalid_argument(name + " must be at least 1, got " + std::to_string(v));
  return v;
}

double Args::GetDouble(const std::string& name, double fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  char* end = nullptr;
  const double v = std::strtod(it->second.c_str(), &end);
  if (it->second.empty() || *end != '\0')
    throw std::invalid_argument(name + " expects a number, got '" + it->second + "'");
  return v;
}

std::vector<long long> Args::GetIntList(const std::string& name, const std::vector<long long>& fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  std::vector<long long> out;
  std::string item;
  for (size_t i = 0; i <= it->second.size(); ++i) {
    const char c = i < it->second.size() ? it->second[i] : ',';
    if (c != ',') {
      item += c;
      continue;
    }
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0')
      throw std::invalid_argument(name + " expects integers separated by commas, got '" + it->second + "'");
    out.push_back(v);
    item.clear();
  }
  return out;
}

void Args::RejectUnknown(const std::set<std::string>& known, bool positional_allowed) const {
  for (const auto& [name, value] : values_)
    if (!known.count(name)) throw std::invalid_argument("unknown flag " + name + " (see --help)");
  if (!positional_allowed && !positional_.empty())
    throw std::invalid_argument("unexpected argument '" + positional_[0] +
                                "': this command takes flags only (see --help)");
}

std::vector<std::string> SplitList(const std::string& list, char sep) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(sep, start);
    if (end == std::string::npos) end = list.size();
    std::string item = list.substr(start, end - start);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) items.push_back(item);
    start = end + 1;
  }
  return items;
}

std::vector<std::string> SplitPlanList(const std::string& list) {
  std::vector<std::string> plans = SplitList(list, ';');
  if (plans.empty()) throw std::invalid_argument("--attn: no plan given");
  return plans;
}

}  // namespace swan::cli
