/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * /proc/kallsyms at record time, text symbols only, compressed: kernel
 * samples resolve on another machine, or after a module unload. Reading
 * it costs about 0.1 s of the kernel's formatting, so it is read in a
 * thread while the programs load, and deflated there as it is read; our
 * own programs, loaded meanwhile, are added from what the kernel says of
 * each (the names it gives them).
 */
#ifndef JT_KALLSYMS_CAPTURE_H
#define JT_KALLSYMS_CAPTURE_H

#include <pthread.h>
#include <stddef.h>
#include <zlib.h>
#include "lib/jt_file.h"

struct jt_kallsyms_capture {
	pthread_t thread;
	int started;
	int err;
	z_stream zs; /* the text, deflated as it is read */
	int zs_ready;
	char *chunk; /* lines not yet deflated */
	size_t chunk_len;
	unsigned char *z; /* the stream so far; zs.total_out long */
	size_t z_cap;
};

/* Start reading; 0 or -errno (then finish reads it itself). */
int jt_kallsyms_start(struct jt_kallsyms_capture *c);
/*
 * Wait for the text, add the symbols of the programs prog_fds (loaded
 * after the read began), write the record; 0 or -errno.
 */
int jt_kallsyms_finish(struct jt_kallsyms_capture *c, struct jt_writer *w,
		       const int *prog_fds, size_t n);
/* Wait for the reader and drop what it read: the recording failed. */
void jt_kallsyms_abandon(struct jt_kallsyms_capture *c);

#endif
