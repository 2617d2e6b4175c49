// The syntax tree of a parsed Jinja template (serve/jinja.h); shared by
// the parser (jinja_parse.cc) and the evaluator (jinja_eval.cc).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "serve/jinja.h"

namespace swan::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,  // literal
    kName,     // name
    kList,     // args = items
    kDict,     // args = key, value, key, value, ...
    kAttr,     // args[0] . name
    kIndex,    // args[0] [ args[1] ]
    kSlice,    // args[0] [ args[1] : args[2] : args[3] ] (null = omitted)
    kCall,     // args[0] ( args[1..], kwargs )
    kFilter,   // args[0] | name ( args[1..], kwargs )
    kTest,     // args[0] is [not] name ( args[1..] )
    kUnary,    // op args[0]: "not", "-"
    kBinary,   // args[0] op args[1]
    kTernary,  // args[0] if args[1] else args[2] (args[2] may be null)
  };
  Kind kind = Kind::kLiteral;
  Json literal;
  std::string name;      // kName, kAttr, kFilter, kTest; op for kUnary/kBinary
  bool negated = false;  // kTest: `is not`
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  int line = 0;
};

struct Node;
using Body = std::vector<Node>;

struct Node {
  enum class Kind { kText, kOutput, kIf, kFor, kSet };
  Kind kind = Kind::kText;
  std::string text;  // kText
  ExprPtr expr;      // kOutput, kSet value, kFor iterable
  // kIf: one (condition, body) per if/elif; a null condition is the else.
  std::vector<std::pair<ExprPtr, Body>> branches;
  // kFor: loop variables (several unpack a pair), optional filter, body, else.
  std::vector<std::string> vars;
  ExprPtr filter;
  Body body, else_body;
  // kSet: `target` or `target.attr`.
  std::string target, target_attr;
  int line = 0;
};

struct Program {
  Body body;
};

// Parses a template (jinja_parse.cc).
Program Parse(std::string_view source);

}  // namespace swan::jinja
