/*
 * half.h - IEEE binary16 and bfloat16 conversions to and from float, round to nearest even,
 * with NaN kept NaN and overflow going to Inf as the hardware does. Header-only so that kernels
 * inline them into their conversion loops (they convert once on the way in and out, never per
 * multiply).
 */
#ifndef BF_HALF_H
#define BF_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t bf_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static inline float bf_bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* bfloat16 is the top half of a float32. */
static inline float bf_bf16_to_f32(uint16_t h) { return bf_bits_f32((uint32_t)h << 16); }

static inline uint16_t bf_f32_to_bf16(float f) {
    uint32_t u = bf_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even; overflows to Inf naturally */
    return (uint16_t)(u >> 16);
}

static inline float bf_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1f) return bf_bits_f32(sign | 0x7f800000u | (man << 13)); /* Inf / NaN */
    if (exp == 0) {
        if (man == 0) return bf_bits_f32(sign);
        /* subnormal: value = man * 2^-24 */
        float v = (float)man * (1.0f / 16777216.0f);
        return sign ? -v : v;
    }
    return bf_bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

static inline uint16_t bf_f32_to_f16(float f) {
    uint32_t u = bf_f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);      /* NaN */
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);     /* >= 65520 rounds to Inf */
    if (a < 0x38800000u) {                                       /* below 2^-14: subnormal */
        /* Adding 0.5 (2^-1) aligns the mantissa so the FPU rounds to nearest even for us. */
        float v = bf_bits_f32(a) + 0.5f;
        return (uint16_t)(sign | (uint16_t)(bf_f32_bits(v) - 0x3f000000u));
    }
    uint32_t r = a + 0xfffu + ((a >> 13) & 1u) - 0x38000000u;    /* rebias 127 -> 15, round */
    return (uint16_t)(sign | (uint16_t)(r >> 13));
}

#endif /* BF_HALF_H */
