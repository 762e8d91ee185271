// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* A library with three pages of initialised data (.data, file-backed). */
char jt_cow_global[3 * 4096] __attribute__((aligned(4096))) = { 1 };
