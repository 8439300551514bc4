/*
 * counter_rng.h - the random numbers of RandomNormal and RandomUniform: element i of a tensor
 * is a pure function of (seed, i), so results do not depend on threads, on the order blocks
 * run in, or on the machine. Uniforms come from splitmix64 of (seed, i); normals from the
 * Box-Muller transform of two such uniforms, computed in double and rounded once to the
 * output dtype (bit-identical wherever libm's log/cos/sin are correctly rounded, as glibc's
 * are to within half an ulp of double, far below float32 resolution).
 */
#ifndef BF_COUNTER_RNG_H
#define BF_COUNTER_RNG_H

#include <math.h>
#include <stdint.h>

static inline uint64_t bf_mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform double in (0, 1), never 0 (so log() is finite): the j-th draw for element i. */
static inline double bf_counter_uniform(uint64_t seed, uint64_t i, uint64_t j) {
    uint64_t z = bf_mix64(seed * 0x9e3779b97f4a7c15ull + bf_mix64(i * 2 + j + 1));
    return ((double)(z >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/* Standard normal for element i (Box-Muller). */
static inline double bf_counter_normal(uint64_t seed, uint64_t i) {
    double u1 = bf_counter_uniform(seed, i, 0), u2 = bf_counter_uniform(seed, i, 1);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

#endif /* BF_COUNTER_RNG_H */
