/**
 * \file kernel_choice.h
 * \brief Kernel choice by measurement: which of a backend's kernels runs each matrix product.
 *
 * A backend may offer several kernels for one op (the CPU backend's matrix product: "gemv", its
 * GEMV; "gemv_int8", the same on activations rounded to 8 bits, where the products may round
 * them; "sgemm", OpenBLAS's on weights widened to f32; the CUDA backend's: "gemv", its GEMV on
 * bf16/f16 or block weights, and "gemm", cuBLAS(Lt)). Its built-in rules pick one by size; the
 * engine can instead time them on the model's own shapes and pin the fastest per shape and
 * row-count bucket, as Collage does. The choices live in a JSON file, per kind of device
 * (backend, model, architecture, threads) and product shape, so that a machine is measured once
 * (`pagoda tune`, or an engine created with ::PAGODA_KERNEL_CHOICE_MEASURE) and later engines
 * reading the file choose the same kernels every time.
 */
#ifndef PAGODA_KERNEL_CHOICE_H
#define PAGODA_KERNEL_CHOICE_H

#include <stddef.h>
#include <stdint.h>

#include "pagoda/common.h"
#include "pagoda/dtype.h"
#include "pagoda/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** \brief ::pagoda_engine_options_t::kernel_choice: how the engine picks kernels. */
typedef enum pagoda_kernel_choice {
    /** The choices in `kernel_choices_file` for the engine's devices and shapes, read once;
     *  nothing is measured, so repeated runs choose alike (a pinned choice). Shapes the file
     *  lacks, and every shape without a file, use the backend's built-in rules. */
    PAGODA_KERNEL_CHOICE_FILE = 0,
    /** As FILE, and when the engine is created every product shape the file lacks is measured
     *  on each device for each power-of-two row count up to `max_num_batched_tokens`; the
     *  file, when named, is then written with them (created if it does not exist). This takes
     *  seconds on a small model and minutes on a large one. */
    PAGODA_KERNEL_CHOICE_MEASURE = 1,
    /** The backend's built-in rules everywhere; no file is read. */
    PAGODA_KERNEL_CHOICE_RULES = 2
} pagoda_kernel_choice_t;

/** \brief One entry of an engine's kernel choices. */
typedef struct pagoda_kernel_choice_info {
    uint32_t struct_size;   /**< Set by the caller to sizeof(pagoda_kernel_choice_info_t). */
    pagoda_dtype_t w_dtype; /**< The weights' type. */
    pagoda_dtype_t x_dtype; /**< The activations' type. */
    pagoda_dtype_t y_dtype; /**< The outputs' type. */
    uint32_t flags;         /**< The products' PAGODA_MATMUL_* bits (ops.h). */
    int64_t n;              /**< Outputs (rows of the weights). */
    int64_t k;              /**< Inputs (columns of the weights). */
    int64_t m;              /**< Rows: the choice holds for products of (m/2, m] rows; m is a
                                 power of two, and what was measured. */
    double seconds;         /**< Time per product of the chosen kernel as measured; 0 if the
                                 file did not say. */
    double rules_seconds;   /**< The same for the backend's built-in rules. */
    char device[192];       /**< The kind of device, NUL-terminated: "backend / arch / model /
                                 N units". */
    char variant[32];       /**< The kernel chosen, NUL-terminated: a name of the backend's
                                 (ops.h's `variant`), or "rules" for its built-in rules. */
} pagoda_kernel_choice_info_t;

/**
 * \brief How many entries the engine's kernel choice table holds: the file's (for every device
 *        kind and shape it names) and what the engine measured.
 * \param[in] engine the engine.
 * \param[out] count the number of entries; 0 under ::PAGODA_KERNEL_CHOICE_RULES.
 * \return ::PAGODA_OK, or ::PAGODA_ERR_INVALID_HANDLE / ::PAGODA_ERR_INVALID_ARGUMENT.
 */
PAGODA_API pagoda_status_t pagoda_engine_kernel_choice_count(const pagoda_engine_t *engine,
                                                             size_t *count);

/**
 * \brief Entry `index` of the engine's kernel choice table, in an order fixed for the engine's
 *        life (by device kind, then types, flags, shape and rows).
 * \param[in] engine the engine.
 * \param[in] index below what ::pagoda_engine_kernel_choice_count gives.
 * \param[out] info the entry, as much of it as `info->struct_size` holds.
 * \return ::PAGODA_OK, or ::PAGODA_ERR_INVALID_ARGUMENT for an index out of range.
 */
PAGODA_API pagoda_status_t pagoda_engine_kernel_choice(const pagoda_engine_t *engine, size_t index,
                                                       pagoda_kernel_choice_info_t *info);

#ifdef __cplusplus
}
#endif

#endif /* PAGODA_KERNEL_CHOICE_H */
