/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#ifndef JT_LIB_UTF8_H
#define JT_LIB_UTF8_H

#include <stddef.h>

/*
 * Length of the valid UTF-8 sequence of two or more bytes at s (at most n
 * bytes), or 0: a lone continuation byte, an overlong form, a surrogate
 * or a code point past U+10FFFF.
 */
size_t jt_utf8_len(const unsigned char *s, size_t n);

#endif
