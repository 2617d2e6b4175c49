// Rendering a parsed Jinja template (serve/jinja_ast.h). Values are JSON;
// an undefined variable is a `discarded` JSON value, so `is defined` can
// tell it from none.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "serve/jinja_ast.h"

namespace swan::jinja {
namespace {

const Json kUndefined = Json(Json::value_t::discarded);

bool IsUndefined(const Json& v) { return v.is_discarded(); }

bool Truthy(const Json& v) {
  if (IsUndefined(v) || v.is_null()) return false;
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number_integer()) return v.get<int64_t>() != 0;
  if (v.is_number()) return v.get<double>() != 0.0;
  if (v.is_string()) return !v.get_ref<const std::string&>().empty();
  return !v.empty();
}

std::string FloatText(double d) {
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (std::isnan(d)) return "nan";
  char buf[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

std::string Quote(const std::string& s, char q) {
  std::string out(1, q);
  for (char c : s) {
    if (c == q || c == '\\') out += '\\';
    if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out + q;
}

// Python's str() of a value (what {{ }} prints).
std::string Str(const Json& v, bool nested = false) {
  if (IsUndefined(v)) return "";
  if (v.is_string()) return nested ? Quote(v.get<std::string>(), '\'') : v.get<std::string>();
  if (v.is_null()) return "None";
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number()) return FloatText(v.get<double>());
  std::string out = v.is_array() ? "[" : "{";
  bool first = true;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (!first) out += ", ";
    first = false;
    if (v.is_object()) out += Quote(it.key(), '\'') + ": ";
    out += Str(*it, true);
  }
  return out + (v.is_array() ? "]" : "}");
}

// Python's json.dumps(v, ensure_ascii=False, indent=indent).
void Dump(const Json& v, int indent, int depth, std::string* out) {
  if (v.is_string()) {
    *out += Json(v).dump(-1, ' ', false, Json::error_handler_t::replace);
    return;
  }
  if (v.is_number_float()) {
    *out += FloatText(v.get<double>());
    return;
  }
  if (!v.is_array() && !v.is_object()) {
    *out += IsUndefined(v) ? "null" : v.dump();
    return;
  }
  const bool arr = v.is_array();
  *out += arr ? '[' : '{';
  if (v.empty()) {
    *out += arr ? ']' : '}';
    return;
  }
  const std::string pad = indent > 0 ? "\n" + std::string(size_t(indent * (depth + 1)), ' ') : "";
  bool first = true;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (!first) *out += indent > 0 ? "," : ", ";
    first = false;
    *out += pad;
    if (!arr) *out += Json(it.key()).dump() + ": ";
    Dump(*it, indent, depth + 1, out);
  }
  if (indent > 0) *out += "\n" + std::string(size_t(indent * depth), ' ');
  *out += arr ? ']' : '}';
}

std::string Trim(const std::string& s, const std::string& chars = " \t\n\r\f\v") {
  const size_t b = s.find_first_not_of(chars);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(chars) - b + 1);
}

class Renderer {
 public:
  explicit Renderer(const Json& context) {
    scopes_.emplace_back();
    if (!context.is_object()) throw TemplateError("chat template: the context must be an object");
    for (auto it = context.begin(); it != context.end(); ++it) scopes_.back()[it.key()] = *it;
  }

  void Run(const Body& body) {
    for (const Node& n : body) Exec(n);
  }
  std::string& out() { return out_; }

 private:
  [[noreturn]] static void Fail(int line, const std::string& what) {
    throw TemplateError("chat template line " + std::to_string(line) + ": " + what);
  }

  Json* Find(const std::string& name) {
    for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s) {
      auto it = s->find(name);
      if (it != s->end()) return &it->second;
    }
    return nullptr;
  }

  void Exec(const Node& n) {
    switch (n.kind) {
      case Node::Kind::kText:
        out_ += n.text;
        CheckOutputSize(n.line);
        break;
      case Node::Kind::kOutput:
        out_ += Str(Eval(*n.expr));
        CheckOutputSize(n.line);
        break;
      case Node::Kind::kIf:
        for (const auto& [cond, body] : n.branches)
          if (!cond || Truthy(Eval(*cond))) {
            Run(body);
            break;
          }
        break;
      case Node::Kind::kSet: {
        Json value = Eval(*n.expr);
        if (n.target_attr.empty()) {
          scopes_.back()[n.target] = std::move(value);
        } else {
          Json* ns = Find(n.target);
          if (!ns || !ns->is_object()) Fail(n.line, "'" + n.target + "' is not a namespace");
          (*ns)[n.target_attr] = std::move(value);
        }
        break;
      }
      case Node::Kind::kFor: ExecFor(n); break;
    }
  }

  void ExecFor(const Node& n) {
    Json seq = Eval(*n.expr);
    std::vector<Json> items;
    if (seq.is_array()) {
      items.assign(seq.begin(), seq.end());
    } else if (seq.is_object()) {
      for (auto it = seq.begin(); it != seq.end(); ++it) items.push_back(it.key());
    } else if (seq.is_string()) {
      for (char c : seq.get<std::string>()) items.push_back(std::string(1, c));
    } else if (!IsUndefined(seq) && !seq.is_null()) {
      Fail(n.line, "cannot loop over " + Str(seq, true));
    }
    CountIteration(n.line, int64_t(items.size()));  // the items made, whether or not they run
    scopes_.emplace_back();
    if (n.filter) {
      std::vector<Json> kept;
      for (const Json& item : items) {
        CountIteration(n.line);
        Bind(n, item);
        if (Truthy(Eval(*n.filter))) kept.push_back(item);
      }
      items = std::move(kept);
    }
    const int64_t len = int64_t(items.size());
    for (int64_t i = 0; i < len; ++i) {
      CountIteration(n.line);
      scopes_.back().clear();
      Bind(n, items[size_t(i)]);
      Json loop = {{"index0", i},   {"index", i + 1},      {"first", i == 0},         {"last", i + 1 == len},
                   {"length", len}, {"revindex", len - i}, {"revindex0", len - i - 1}};
      loop["previtem"] = i > 0 ? items[size_t(i - 1)] : kUndefined;
      loop["nextitem"] = i + 1 < len ? items[size_t(i + 1)] : kUndefined;
      scopes_.back()["loop"] = std::move(loop);
      Run(n.body);
    }
    scopes_.pop_back();
    if (len == 0) Run(n.else_body);
  }

  void Bind(const Node& n, const Json& item) {
    if (n.vars.size() == 1) {
      scopes_.back()[n.vars[0]] = item;
      return;
    }
    if (!item.is_array() || item.size() != n.vars.size())
      Fail(n.line, "cannot unpack " + Str(item, true) + " into " + std::to_string(n.vars.size()) + " names");
    for (size_t i = 0; i < n.vars.size(); ++i) scopes_.back()[n.vars[i]] = item[i];
  }

  Json Eval(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::kLiteral: return e.literal;
      case Expr::Kind::kName: {
        const Json* v = Find(e.name);
        return v ? *v : kUndefined;
      }
      case Expr::Kind::kList: {
        Json list = Json::array();
        for (const ExprPtr& a : e.args) list.push_back(Eval(*a));
        return list;
      }
      case Expr::Kind::kDict: {
        Json dict = Json::object();
        for (size_t i = 0; i + 1 < e.args.size(); i += 2) dict[Str(Eval(*e.args[i]))] = Eval(*e.args[i + 1]);
        return dict;
      }
      case Expr::Kind::kAttr: {
        const Json obj = Eval(*e.args[0]);
        if (obj.is_object() && obj.contains(e.name)) return obj[e.name];
        return kUndefined;
      }
      case Expr::Kind::kIndex: return Index(Eval(*e.args[0]), Eval(*e.args[1]));
      case Expr::Kind::kSlice: return Slice(e);
      case Expr::Kind::kCall: return Call(e);
      case Expr::Kind::kFilter: return Filter(e);
      case Expr::Kind::kTest: {
        const bool r = Test(e);
        return e.negated ? !r : r;
      }
      case Expr::Kind::kUnary: {
        const Json v = Eval(*e.args[0]);
        if (e.name == "not") return !Truthy(v);
        if (v.is_number_integer()) {
          if (v.get<int64_t>() == std::numeric_limits<int64_t>::min())
            Fail(e.line, "integer overflow: -(" + Str(v) + ")");
          return -v.get<int64_t>();
        }
        if (v.is_number()) return -v.get<double>();
        Fail(e.line, "cannot negate " + Str(v, true));
      }
      case Expr::Kind::kBinary: return Binary(e);
      case Expr::Kind::kTernary:
        if (Truthy(Eval(*e.args[1]))) return Eval(*e.args[0]);
        return e.args[2] ? Eval(*e.args[2]) : kUndefined;
    }
    return kUndefined;
  }

  static Json Index(const Json& obj, const Json& key) {
    if (obj.is_object() && key.is_string()) {
      auto it = obj.find(key.get<std::string>());
      return it == obj.end() ? kUndefined : *it;
    }
    if ((obj.is_array() || obj.is_string()) && key.is_number_integer()) {
      const int64_t n = obj.is_array() ? int64_t(obj.size()) : int64_t(obj.get_ref<const std::string&>().size());
      int64_t i = key.get<int64_t>();
      if (i < 0) i += n;
      if (i < 0 || i >= n) return kUndefined;
      if (obj.is_array()) return obj[size_t(i)];
      return std::string(1, obj.get_ref<const std::string&>()[size_t(i)]);
    }
    return kUndefined;
  }

  Json Slice(const Expr& e) {
    const Json obj = Eval(*e.args[0]);
    const bool is_str = obj.is_string();
    if (!obj.is_array() && !is_str) Fail(e.line, "cannot slice " + Str(obj, true));
    const int64_t n = is_str ? int64_t(obj.get_ref<const std::string&>().size()) : int64_t(obj.size());
    auto bound = [&](const ExprPtr& p, int64_t fallback) {
      if (!p) return fallback;
      const Json v = Eval(*p);
      if (v.is_null()) return fallback;
      int64_t i = Integer(v, e.line, "a slice index");
      if (i < 0) i += n;
      return std::clamp<int64_t>(i, -1, n);
    };
    const int64_t step = e.args[3] ? Integer(Eval(*e.args[3]), e.line, "a slice step") : 1;
    if (step == 0) Fail(e.line, "slice step cannot be zero");
    const int64_t start = bound(e.args[1], step > 0 ? 0 : n - 1);
    const int64_t stop = bound(e.args[2], step > 0 ? n : -1);
    Json out = is_str ? Json("") : Json::array();
    for (int64_t i = std::max<int64_t>(start, step > 0 ? 0 : -1); step > 0 ? i < stop : i > stop; i += step) {
      if (i < 0 || i >= n) break;
      if (is_str)
        out.get_ref<std::string&>() += obj.get_ref<const std::string&>()[size_t(i)];
      else
        out.push_back(obj[size_t(i)]);
    }
    return out;
  }

  Json Binary(const Expr& e) {
    const std::string& op = e.name;
    if (op == "and") {
      Json a = Eval(*e.args[0]);
      return Truthy(a) ? Eval(*e.args[1]) : a;
    }
    if (op == "or") {
      Json a = Eval(*e.args[0]);
      return Truthy(a) ? a : Eval(*e.args[1]);
    }
    const Json a = Eval(*e.args[0]), b = Eval(*e.args[1]);
    if (op == "==") return Equal(a, b);
    if (op == "!=") return !Equal(a, b);
    if (op == "~") return Str(a) + Str(b);
    if (op == "in" || op == "not in") {
      bool found = false;
      if (b.is_string())
        found = b.get<std::string>().find(Str(a)) != std::string::npos;
      else if (b.is_array())
        found = std::any_of(b.begin(), b.end(), [&](const Json& x) { return Equal(x, a); });
      else if (b.is_object())
        found = a.is_string() && b.contains(a.get<std::string>());
      return op == "in" ? found : !found;
    }
    if (op == "+" && (a.is_string() || b.is_string())) {
      if (!a.is_string() || !b.is_string())
        Fail(e.line, "cannot add " + Str(a, true) + " and " + Str(b, true) + " (use ~ to join text)");
      return a.get<std::string>() + b.get<std::string>();
    }
    if (op == "+" && a.is_array() && b.is_array()) {
      Json out = a;
      for (const Json& x : b) out.push_back(x);
      return out;
    }
    if (op == "<" || op == ">" || op == "<=" || op == ">=") {
      if (a.is_string() && b.is_string()) {
        const int c = a.get<std::string>().compare(b.get<std::string>());
        return op == "<" ? c < 0 : op == ">" ? c > 0 : op == "<=" ? c <= 0 : c >= 0;
      }
      const double x = Number(a, e.line), y = Number(b, e.line);
      return op == "<" ? x < y : op == ">" ? x > y : op == "<=" ? x <= y : x >= y;
    }
    const double x = Number(a, e.line), y = Number(b, e.line);
    const bool ints = a.is_number_integer() && b.is_number_integer();
    if (ints && (op == "+" || op == "-" || op == "*")) {
      // Python's integers do not overflow; int64 here, so a result past
      // it is an error that says so, not undefined behaviour
      const int64_t i = a.get<int64_t>(), j = b.get<int64_t>();
      int64_t r = 0;
      const bool overflow = op == "+"   ? __builtin_add_overflow(i, j, &r)
                            : op == "-" ? __builtin_sub_overflow(i, j, &r)
                                        : __builtin_mul_overflow(i, j, &r);
      if (overflow) Fail(e.line, "integer overflow: " + Str(a) + " " + op + " " + Str(b) + " is past 64 bits");
      return r;
    }
    if (op == "+") return x + y;
    if (op == "-") return x - y;
    if (op == "*") return x * y;
    if (op == "/") return x / y;
    if (y == 0) Fail(e.line, "division by zero");
    if (ints && (op == "//" || op == "%")) {
      // floor division and a remainder with the divisor's sign, as Python's
      const int64_t i = a.get<int64_t>(), j = b.get<int64_t>();
      if (j == -1) {
        if (op == "%") return int64_t(0);
        if (i == std::numeric_limits<int64_t>::min()) Fail(e.line, "integer overflow: " + Str(a) + " // -1");
        return -i;
      }
      const int64_t q = i / j, m = i % j;
      const bool below = m != 0 && ((m < 0) != (j < 0));
      return op == "//" ? (below ? q - 1 : q) : (below ? m + j : m);
    }
    if (op == "//") return std::floor(x / y);
    if (op == "%") return std::fmod(x, y);
    Fail(e.line, "unsupported operator '" + op + "'");
  }

  static bool Equal(const Json& a, const Json& b) {
    if (IsUndefined(a) || IsUndefined(b)) return IsUndefined(a) && IsUndefined(b);
    return a == b;
  }

  // A slice bound or a range() argument: an integer (Python's also take
  // booleans), anything else an error that says what it got.
  static int64_t Integer(const Json& v, int line, const char* what) {
    if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
    if (!v.is_number_integer())
      Fail(line, std::string(what) + " must be an integer, got " + (IsUndefined(v) ? "undefined" : Str(v, true)));
    return v.get<int64_t>();
  }

  static double Number(const Json& v, int line) {
    if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
    if (!v.is_number()) Fail(line, "expected a number, got " + (IsUndefined(v) ? "undefined" : Str(v, true)));
    return v.get<double>();
  }

  Json Kwarg(const Expr& e, const std::string& name, size_t position, const Json& fallback) {
    for (const auto& [k, v] : e.kwargs)
      if (k == name) return Eval(*v);
    return position < e.args.size() ? Eval(*e.args[position]) : fallback;
  }

  Json Call(const Expr& e) {
    const Expr& callee = *e.args[0];
    if (callee.kind == Expr::Kind::kName) {
      if (callee.name == "raise_exception")
        throw TemplateError("chat template: " + Str(Kwarg(e, "message", 1, "raise_exception()")));
      if (callee.name == "range") {
        const int64_t a = Integer(Kwarg(e, "start", 1, 0), e.line, "range()'s argument");
        const bool two = e.args.size() > 2;
        const int64_t start = two ? a : 0, stop = two ? Integer(Eval(*e.args[2]), e.line, "range()'s argument") : a;
        // A chat template counts messages; a range past this is a mistake
        // that would otherwise take all memory.
        constexpr int64_t kMaxRange = 1 << 20;
        if (stop > start && uint64_t(stop) - uint64_t(start) > uint64_t(kMaxRange))
          Fail(e.line, "range() of more than " + std::to_string(kMaxRange) + " numbers");
        Json out = Json::array();
        for (int64_t i = start; i < stop; ++i) out.push_back(i);
        return out;
      }
      if (callee.name == "namespace") {
        Json ns = Json::object();
        for (const auto& [k, v] : e.kwargs) ns[k] = Eval(*v);
        return ns;
      }
      Fail(e.line, "unknown function '" + callee.name + "'");
    }
    if (callee.kind != Expr::Kind::kAttr) Fail(e.line, "only functions and methods can be called");
    const Json self = Eval(*callee.args[0]);
    const std::string& m = callee.name;
    if (self.is_string()) {
      const std::string s = self.get<std::string>();
      const Json a = Kwarg(e, "", 1, kUndefined);
      if (m == "strip") return Trim(s, a.is_string() ? a.get<std::string>() : " \t\n\r\f\v");
      if (m == "lstrip") {
        const size_t b = s.find_first_not_of(a.is_string() ? a.get<std::string>() : " \t\n\r\f\v");
        return b == std::string::npos ? "" : s.substr(b);
      }
      if (m == "rstrip") {
        const size_t b = s.find_last_not_of(a.is_string() ? a.get<std::string>() : " \t\n\r\f\v");
        return b == std::string::npos ? "" : s.substr(0, b + 1);
      }
      if (m == "upper" || m == "lower") {
        std::string out = s;
        for (char& c : out)
          c = char(m == "upper" ? std::toupper(static_cast<unsigned char>(c))
                                : std::tolower(static_cast<unsigned char>(c)));
        return out;
      }
      if (m == "startswith") return s.rfind(Str(a), 0) == 0;
      if (m == "endswith") {
        const std::string x = Str(a);
        return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
      }
      if (m == "split") {
        Json out = Json::array();
        if (!a.is_string()) {
          size_t i = 0;
          while (i < s.size()) {
            while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
            size_t j = i;
            while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j]))) ++j;
            if (j > i) out.push_back(s.substr(i, j - i));
            i = j;
          }
          return out;
        }
        const std::string sep = a.get<std::string>();
        if (sep.empty()) Fail(e.line, "empty separator");
        size_t i = 0;
        for (size_t j; (j = s.find(sep, i)) != std::string::npos; i = j + sep.size()) out.push_back(s.substr(i, j - i));
        out.push_back(s.substr(i));
        return out;
      }
      if (m == "replace") return ReplaceAll(s, Str(a), Str(Kwarg(e, "", 2, "")));
      if (m == "format") Fail(e.line, "str.format is not supported");
    }
    if (self.is_object()) {
      if (m == "items") {
        Json out = Json::array();
        for (auto it = self.begin(); it != self.end(); ++it) out.push_back(Json::array({it.key(), *it}));
        return out;
      }
      if (m == "keys" || m == "values") {
        Json out = Json::array();
        for (auto it = self.begin(); it != self.end(); ++it) out.push_back(m == "keys" ? Json(it.key()) : *it);
        return out;
      }
      if (m == "get") {
        const Json key = Kwarg(e, "", 1, kUndefined);
        const Json v = Index(self, key);
        return IsUndefined(v) ? Kwarg(e, "", 2, nullptr) : v;
      }
    }
    Fail(e.line, "unsupported method '" + m + "' on " + (IsUndefined(self) ? "undefined" : Str(self, true)));
  }

  static std::string ReplaceAll(std::string s, const std::string& from, const std::string& to) {
    if (from.empty()) return s;
    for (size_t i = 0; (i = s.find(from, i)) != std::string::npos; i += to.size()) s.replace(i, from.size(), to);
    return s;
  }

  Json Filter(const Expr& e) {
    const Json v = Eval(*e.args[0]);
    const std::string& f = e.name;
    if (f == "trim") return Trim(Str(v));
    if (f == "tojson") {
      std::string out;
      const Json indent = Kwarg(e, "indent", 1, nullptr);
      Dump(v, indent.is_number_integer() ? int(indent.get<int64_t>()) : 0, 0, &out);
      return out;
    }
    if (f == "length" || f == "count") {
      if (v.is_string()) return int64_t(v.get_ref<const std::string&>().size());
      return int64_t(IsUndefined(v) || v.is_null() ? 0 : v.size());
    }
    if (f == "list") {
      if (v.is_array()) return v;
      Json out = Json::array();
      if (v.is_string())
        for (char c : v.get<std::string>()) out.push_back(std::string(1, c));
      if (v.is_object())
        for (auto it = v.begin(); it != v.end(); ++it) out.push_back(it.key());
      return out;
    }
    if (f == "first" || f == "last") {
      if (!v.is_array() || v.empty()) return kUndefined;
      return f == "first" ? v.front() : v.back();
    }
    if (f == "upper" || f == "lower" || f == "capitalize") {
      std::string s = Str(v);
      for (size_t i = 0; i < s.size(); ++i) {
        const bool up = f == "upper" || (f == "capitalize" && i == 0);
        s[i] =
            char(up ? std::toupper(static_cast<unsigned char>(s[i])) : std::tolower(static_cast<unsigned char>(s[i])));
      }
      return s;
    }
    if (f == "default" || f == "d") {
      const bool boolean = Truthy(Kwarg(e, "boolean", 2, false));
      return (IsUndefined(v) || (boolean && !Truthy(v))) ? Kwarg(e, "default_value", 1, "") : v;
    }
    if (f == "string") return Str(v);
    if (f == "int") {
      // Python's int(): a number truncated, a string's leading integer (0 if
      // none); what int64 cannot hold is an error, not undefined behaviour.
      if (v.is_number_integer()) return v;
      double x = 0;
      if (v.is_number()) {
        x = v.get<double>();
      } else {
        const std::string text = Trim(Str(v));
        errno = 0;
        const long long parsed = std::strtoll(text.c_str(), nullptr, 10);
        if (errno == ERANGE) Fail(e.line, "int(): " + text + " is out of range");
        return Json(int64_t(parsed));
      }
      if (!(std::fabs(x) < 9.2e18)) Fail(e.line, "int(): " + Str(v) + " is out of range");
      return Json(int64_t(x));
    }
    if (f == "join") {
      std::string out;
      const std::string sep = Str(Kwarg(e, "d", 1, ""));
      bool first = true;
      for (const Json& x : v) {
        if (!first) out += sep;
        first = false;
        out += Str(x);
      }
      return out;
    }
    if (f == "replace") return ReplaceAll(Str(v), Str(Kwarg(e, "old", 1, "")), Str(Kwarg(e, "new", 2, "")));
    if (f == "items") {
      Json out = Json::array();
      if (v.is_object())
        for (auto it = v.begin(); it != v.end(); ++it) out.push_back(Json::array({it.key(), *it}));
      return out;
    }
    if (f == "selectattr" || f == "rejectattr") {
      if (e.args.size() < 2) Fail(e.line, f + " needs an attribute name");
      const std::string attr = Str(Eval(*e.args[1]));
      const std::string test = e.args.size() > 2 ? Str(Eval(*e.args[2])) : "";
      const Json arg = e.args.size() > 3 ? Eval(*e.args[3]) : kUndefined;
      Json out = Json::array();
      if (!v.is_array()) return out;
      for (const Json& item : v) {
        const Json x = Index(item, attr);
        const bool pass = test.empty() ? Truthy(x) : ApplyTest(test, x, arg, e.line);
        if (pass == (f == "selectattr")) out.push_back(item);
      }
      return out;
    }
    if (f == "map") {
      const Json attr = Kwarg(e, "attribute", 99, kUndefined);
      Json out = Json::array();
      if (IsUndefined(attr)) Fail(e.line, "map() is supported only as map(attribute=...)");
      if (v.is_array())
        for (const Json& item : v) out.push_back(Index(item, attr));
      return out;
    }
    Fail(e.line, "unsupported filter '" + f + "'");
  }

  bool Test(const Expr& e) {
    const Json v = Eval(*e.args[0]);
    const Json arg = e.args.size() > 1 ? Eval(*e.args[1]) : kUndefined;
    return ApplyTest(e.name, v, arg, e.line);
  }

  static bool ApplyTest(const std::string& t, const Json& v, const Json& arg, int line) {
    if (t == "defined") return !IsUndefined(v);
    if (t == "undefined") return IsUndefined(v);
    if (t == "none") return v.is_null();
    if (t == "string") return v.is_string();
    if (t == "number") return v.is_number();
    if (t == "integer") return v.is_number_integer();
    if (t == "boolean") return v.is_boolean();
    if (t == "true") return v.is_boolean() && v.get<bool>();
    if (t == "false") return v.is_boolean() && !v.get<bool>();
    if (t == "mapping") return v.is_object();
    if (t == "sequence") return v.is_array() || v.is_string();
    if (t == "iterable") return v.is_array() || v.is_string() || v.is_object();
    if (t == "equalto" || t == "eq" || t == "==") return Equal(v, arg);
    if (t == "ne" || t == "!=") return !Equal(v, arg);
    if (t == "odd" || t == "even") {
      if (!v.is_number_integer()) Fail(line, "'" + t + "' needs an integer");
      return (v.get<int64_t>() % 2 != 0) == (t == "odd");
    }
    Fail(line, "unsupported test '" + t + "'");
  }

  // A render's budget: loops' items and iterations, and output. Nested
  // loops over strings (a character an item) made a 1 KB template run for
  // minutes (chat_template_fuzz). A loop over N messages costs 2N.
  static constexpr int64_t kMaxIterations = int64_t(1) << 16;
  static constexpr size_t kMaxOutputBytes = size_t(64) << 20;
  void CountIteration(int line, int64_t count = 1) {
    iterations_ += count;
    if (iterations_ > kMaxIterations)
      Fail(line, "more than " + std::to_string(kMaxIterations) + " loop iterations in one render");
  }
  void CheckOutputSize(int line) const {
    if (out_.size() > kMaxOutputBytes)
      Fail(line, "more than " + std::to_string(kMaxOutputBytes >> 20) + " MiB of output in one render");
  }

  std::vector<std::map<std::string, Json>> scopes_;
  std::string out_;
  int64_t iterations_ = 0;  // loops' items made and iterations run so far, filters' included
};

}  // namespace

Template::Template(std::string_view source) : program_(std::make_unique<Program>(Parse(source))) {}
Template::~Template() = default;
Template::Template(Template&&) noexcept = default;
Template& Template::operator=(Template&&) noexcept = default;

std::string Template::Render(const Json& context) const {
  Renderer r(context);
  r.Run(program_->body);
  return std::move(r.out());
}

}  // namespace swan::jinja
