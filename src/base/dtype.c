/* The one dtype table: every element type a family stores, with its width, its names in
 * ckptscope's reports, in safetensors headers and in NumPy, and how its values widen to double.
 * Statistics, health, pairing and export take widths and names from here. */
#include "base/common.h"

#include <math.h>
#include <string.h>

static const struct {
    const char *name, *safetensors, *numpy;
    unsigned width;
    bool is_float, layouts, stats;
} dtypes[CKPT_DTYPE_COUNT] = {
    [CKPT_FLOAT32] = {"float32", "F32", "<f4", 4, true, true, true},
    [CKPT_FLOAT64] = {"float64", "F64", "<f8", 8, true, true, true},
    [CKPT_FLOAT16] = {"float16", "F16", "<f2", 2, true, false, true},
    /* NumPy has no bfloat16: a .npy of one has no type string to write */
    [CKPT_BFLOAT16] = {"bfloat16", "BF16", NULL, 2, true, false, true},
    [CKPT_INT64] = {"int64", "I64", "<i8", 8, false, false, true},
    [CKPT_INT32] = {"int32", "I32", "<i4", 4, false, false, true},
    [CKPT_INT16] = {"int16", "I16", "<i2", 2, false, false, true},
    [CKPT_INT8] = {"int8", "I8", "|i1", 1, false, false, true},
    [CKPT_UINT8] = {"uint8", "U8", "|u1", 1, false, false, true},
    [CKPT_BOOL] = {"bool", "BOOL", "|b1", 1, false, false, true},
    [CKPT_FLOAT8_E4M3] = {"float8_e4m3", "F8_E4M3", NULL, 1, true, false, false},
    [CKPT_FLOAT8_E5M2] = {"float8_e5m2", "F8_E5M2", NULL, 1, true, false, false},
};

static bool known(int dtype) { return dtype >= 0 && dtype < CKPT_DTYPE_COUNT; }

unsigned ckpt_dtype_width(int dtype) { return known(dtype) ? dtypes[dtype].width : 0; }
const char *ckpt_dtype_name(int dtype) { return known(dtype) ? dtypes[dtype].name : NULL; }
const char *ckpt_dtype_safetensors_name(int dtype) { return known(dtype) ? dtypes[dtype].safetensors : NULL; }
const char *ckpt_dtype_numpy_name(int dtype) { return known(dtype) ? dtypes[dtype].numpy : NULL; }
bool ckpt_dtype_in_layouts(int dtype) { return known(dtype) && dtypes[dtype].layouts; }
bool ckpt_dtype_has_stats(int dtype) { return known(dtype) && dtypes[dtype].stats; }
bool ckpt_dtype_is_float(int dtype) { return known(dtype) && dtypes[dtype].is_float; }

char ckpt_dtype_kind(int dtype)
{
    if (!known(dtype)) return 0;
    if (dtypes[dtype].is_float) return 'f';
    return dtype == CKPT_BOOL ? 'b' : dtype == CKPT_UINT8 ? 'u' : 'i';
}

int ckpt_dtype_of_safetensors_name(const char *name)
{
    for (int d = 0; name && d < CKPT_DTYPE_COUNT; d++)
        if (strcmp(name, dtypes[d].safetensors) == 0) return d;
    return -1;
}

/* IEEE binary16: sign, 5 exponent bits, 10 fraction bits; every value is a double exactly. */
static double half_to_double(uint16_t h)
{
    int e = (h >> 10) & 0x1f;
    unsigned f = h & 0x3ffu;
    double x;
    if (e == 0) x = (double)f * 0x1p-24; /* zero and subnormals: f * 2^-24 */
    else if (e == 31) x = f ? (double)NAN : (double)INFINITY;
    else x = (double)(f | 0x400u) * ldexp(1.0, e - 25);
    return h & 0x8000u ? -x : x;
}

/* bfloat16: the upper half of a binary32. */
static double bf16_to_double(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float x;
    memcpy(&x, &bits, 4);
    return x;
}

void ckpt_dtype_widen(int dtype, const void *p, size_t n, double *out)
{
    const uint8_t *b = p;
    /* the moments' dtypes first, without a switch per element (gradients stream through here) */
    if (dtype == CKPT_FLOAT64) {
        memcpy(out, p, n * 8);
        return;
    }
    if (dtype == CKPT_FLOAT32) {
        for (size_t k = 0; k < n; k++) {
            float x;
            memcpy(&x, b + 4 * k, 4);
            out[k] = x;
        }
        return;
    }
    for (size_t k = 0; k < n; k++) {
        const uint8_t *q = b + k * ckpt_dtype_width(dtype);
        switch (dtype) {
            case CKPT_FLOAT32: {
                float x;
                memcpy(&x, q, 4);
                out[k] = x;
                break;
            }
            case CKPT_FLOAT64: memcpy(&out[k], q, 8); break;
            case CKPT_FLOAT16: out[k] = half_to_double((uint16_t)(q[0] | q[1] << 8)); break;
            case CKPT_BFLOAT16: out[k] = bf16_to_double((uint16_t)(q[0] | q[1] << 8)); break;
            case CKPT_INT64: {
                int64_t x;
                memcpy(&x, q, 8);
                out[k] = (double)x;
                break;
            }
            case CKPT_INT32: {
                int32_t x;
                memcpy(&x, q, 4);
                out[k] = x;
                break;
            }
            case CKPT_INT16: {
                int16_t x;
                memcpy(&x, q, 2);
                out[k] = x;
                break;
            }
            case CKPT_INT8: out[k] = (int8_t)q[0]; break;
            case CKPT_UINT8: out[k] = q[0]; break;
            case CKPT_BOOL: out[k] = q[0] != 0; break;
            default: out[k] = NAN; break;
        }
    }
}
