/* Straight-line code of varied operations, so the benchmark gets real
 * compiler output of a chosen size that is not one pattern repeated (which
 * would compress far better than real kernels do). Every MIXED_STEP() is one
 * operation chosen by a hash of __COUNTER__, a constant, so the compiler keeps
 * one case per step; the REPEAT macros take a macro name, not a call, so each
 * expansion draws its own counter value. */
#define MIXED_STEP() MIXED_OP(((__COUNTER__ + 1u) * 2654435761u) ^ 0x5bd1e995u)
#define MIXED_OP(hash)                                                                             \
    {                                                                                              \
        const uint h = (hash);                                                                     \
        const float c = as_float(0x3f800000u | (h & 0x7fffffu)); /* in [1, 2) */                   \
        switch ((h >> 22) & 15u) {                                                                 \
        case 0:                                                                                    \
            acc = sin(acc) * c;                                                                    \
            break;                                                                                 \
        case 1:                                                                                    \
            acc = acc * c + x[i + (h & 1023u)];                                                    \
            break;                                                                                 \
        case 2:                                                                                    \
            k = k * (int)(h | 1u) + (int)(h >> 7);                                                 \
            acc += (float)k;                                                                       \
            break;                                                                                 \
        case 3:                                                                                    \
            acc = native_exp2(acc * c) - a;                                                        \
            break;                                                                                 \
        case 4:                                                                                    \
            acc = fmax(acc, x[i + (h & 4095u)] * c);                                               \
            break;                                                                                 \
        case 5:                                                                                    \
            k ^= (int)(h >> 3);                                                                    \
            acc = acc * a + (float)(k & 255);                                                      \
            break;                                                                                 \
        case 6:                                                                                    \
            acc = sqrt(fabs(acc) + c);                                                             \
            break;                                                                                 \
        case 7:                                                                                    \
            v = v * c + vload4(i + (h & 511u), x);                                                 \
            break;                                                                                 \
        case 8:                                                                                    \
            v = v.wzyx - (float4)(acc, c, a, (float)k);                                            \
            break;                                                                                 \
        case 9:                                                                                    \
            acc += dot(v, (float4)(c, a, acc, 1.0f));                                              \
            break;                                                                                 \
        case 10:                                                                                   \
            k = rotate(k, (int)(h & 31u)) + (int)popcount((uint)k);                                \
            break;                                                                                 \
        case 11:                                                                                   \
            idx[i + (h & 2047u)] = k + (int)h;                                                     \
            break;                                                                                 \
        case 12:                                                                                   \
            k = k / (int)((h & 1023u) | 1u) + mul24(k, (int)(h & 255u));                           \
            break;                                                                                 \
        case 13:                                                                                   \
            acc = acc < c ? acc * a : native_log2(acc + c);                                        \
            break;                                                                                 \
        case 14:                                                                                   \
            v = fmin(v, (float4)(c)) * native_rsqrt(fabs(v) + a);                                  \
            break;                                                                                 \
        default:                                                                                   \
            acc = native_cos(acc * c) + x[i + (h & 255u)];                                         \
            break;                                                                                 \
        }                                                                                          \
    }

#define REPEAT_4(step) step() step() step() step()
#define REPEAT_16(step) REPEAT_4(step) REPEAT_4(step) REPEAT_4(step) REPEAT_4(step)
#define REPEAT_64(step) REPEAT_16(step) REPEAT_16(step) REPEAT_16(step) REPEAT_16(step)
#define REPEAT_256(step) REPEAT_64(step) REPEAT_64(step) REPEAT_64(step) REPEAT_64(step)
/* About 200 KB of tgllp code: IGC compiles a kernel this long at SIMD8 only,
 * about 290 bytes a step (shorter ones also at SIMD16, so size is not
 * proportional below about 350 steps). */
#define REPEAT_704(step)                                                                           \
    REPEAT_256(step) REPEAT_256(step) REPEAT_64(step) REPEAT_64(step) REPEAT_64(step)

/* A kernel whose body is repeat(MIXED_STEP), e.g. repeat = REPEAT_704. */
#define MIXED_KERNEL(name, repeat)                                                                 \
    kernel void name(global float *y, global const float *x, global int *idx, float a)             \
    {                                                                                              \
        size_t i = get_global_id(0);                                                               \
        float acc = y[i];                                                                          \
        int k = idx[i];                                                                            \
        float4 v = vload4(i, x);                                                                   \
        repeat(MIXED_STEP);                                                                        \
        y[i] = acc + (float)k + v.x + v.y + v.z + v.w;                                             \
    }
