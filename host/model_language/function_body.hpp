// nholo/host/model_language/function_body.hpp — the body of a generated
// function that computes several outputs (hand_dynamics: the entries of M and
// F) from expression trees sharing nodes: every node used more than once
// computed once into a temporary, and a body too large for the compiler
// written in parts. Internal to host/model_language/ (model_header.cpp).
//
// Why parts: g++ compiles one straight-line function in a time that grows
// faster than its length (register allocation, dead-store elimination and
// the combiner over one basic block of thousands of live values): the
// symbolic M and F of an 8-coordinate model of 38,000 nodes took 30 s of
// -O3 alone, 41 s on SIMD lanes, in every unit that used it. Cut into parts
// of about kPartCharacters of printed code, each a function of its own (not
// inlined), and every long expression cut into temporaries of at most about
// 500 nodes, the same code compiles in 4 s and runs as fast
// (docs/BENCHMARKS.md, section 20). A value one part computes and a later
// part uses passes through an array the function declares (xs of the scalar
// type, xd of double), its slot reused once no later part reads it; the
// outputs are written as soon as their operands are computed, so few values
// live across parts. The operations and their order within each value are
// those of the single function: the same bits.
#pragma once

#include <string>
#include <vector>

#include "host/model_language/code_printer.hpp"
#include "host/model_language/expr/tree.hpp"

namespace nholo::model_file {

// lhs = S(root); then mirror = lhs when mirror is not empty (M's symmetric
// entry)
struct FunctionOutput {
  const Expr* root;
  std::string lhs;
  std::string mirror;
};

// characters of printed code per part; a body is written in parts from
// kPartsFrom parts' worth (below it: one function, as before parts existed)
constexpr size_t kPartCharacters = 10000;
constexpr size_t kPartsFrom = 4;
// in parts, no line prints more than about 2 L + 1 nodes, L = part
// characters / kCharactersPerLineNode (250 for the default parts): a longer
// expression (an entry of F summing thousands of terms) is cut into
// temporaries
constexpr size_t kCharactersPerLineNode = 40;

struct FunctionBody {
  // one function's lines when parts.size() == 1 (temporaries first, then
  // the outputs in their order); else each part's lines
  std::vector<std::vector<std::string>> parts;
  int s_slots = 0;       // xs: values of the scalar type passed between parts
  int double_slots = 0;  // xd: double ones (parameters only)
  // the nodes the body prints, post-order (not under hoisted ones)
  std::vector<const Expr*> order;
};

// The common subexpressions of the trees one generated function prints
// (roots, none null): every node that more than one parent (or root slot)
// uses, not a leaf (nor a negated one) and not hoisted, computed once into a
// temporary c<k>, in an order where each comes after the ones it uses. A
// definition ([definitions]) named twice is one; so are the symbolic
// derivatives' shared nodes. Trees without shared nodes get none.
struct Temporaries {
  TempNames names;                 // hoisted ones and the temporaries
  std::vector<std::string> lines;  // "    const S c0 = S(...);"
  std::vector<const Expr*> order;  // the distinct nodes, post-order (not under hoisted ones)
  Temporaries(const std::vector<const Expr*>& roots, const TempNames& hoisted);
};

// the body computing outputs (their temporaries as Temporaries makes them,
// or in parts); hoisted: parameter-only subexpressions
// printed by name (Params::k); part_characters: 0 for kPartCharacters (a
// test gives a small size to have a small model's body in parts)
FunctionBody function_body(const std::vector<FunctionOutput>& outputs, const TempNames& hoisted,
                           size_t part_characters = 0);

}  // namespace nholo::model_file
