/* vectorize.h: VECTORIZE asks GCC to vectorise one function's loops
 * (optimize("tree-vectorize"): GCC 12 at -O2 vectorises only the cheapest
 * loops). Clang vectorises at -O2 anyway and has no such attribute: there
 * it says nothing. */
#ifndef BOXD_VECTORIZE_H
#define BOXD_VECTORIZE_H

#if defined(__GNUC__) && !defined(__clang__)
#define VECTORIZE __attribute__((optimize("tree-vectorize")))
#else
#define VECTORIZE
#endif

#endif
