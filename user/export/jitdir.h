/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * OUT.jit, beside a perf.data export: the small ELF files perf names JIT
 * code by. jittrace may run as root and OUT may sit in a directory others
 * write to, so the directory is made fresh, reached without following a
 * link, and holds only what this export writes.
 */
#ifndef JT_EXPORT_JITDIR_H
#define JT_EXPORT_JITDIR_H

#include <limits.h>

/*
 * Make OUT.jit (0700), replacing an earlier export's: a directory of ours
 * that only we may write, holding jitted-*.so files and nothing else.
 * Anything else there is -EEXIST. Returns the directory's descriptor and
 * its absolute path in abs, or -errno.
 */
int jt_jitdir_make(const char *out, char abs[PATH_MAX]);
/* Remove the directory and the jitted-*.so files in it. */
void jt_jitdir_remove(int dirfd, const char *abs);

#endif
