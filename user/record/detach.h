/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Detaching BPF programs waits for the kernel: a grace period per link,
 * and on 6.18 they follow one another even from threads side by side
 * (0.42 s for a recording's twenty links here). By then the recording is
 * complete, so the user need not wait: a child keeps the links open while
 * the recorder exits, and lets them go after it.
 */
#ifndef JT_RECORD_DETACH_H
#define JT_RECORD_DETACH_H

#include <stddef.h>

/*
 * Fork a keeper that holds fds (the links) and nothing else, not even
 * the terminal or the recorder's output, until this process has exited;
 * then it exits and the kernel detaches them. Nothing happens when the
 * keeper cannot be made: the caller's own close detaches as before.
 */
void jt_detach_after_exit(const int *fds, size_t n);

#endif
