// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer harness: any byte string as a jitdump and as a perf-map, fed
 * in two pieces split where the first byte says, as a file still being
 * written arrives.
 */
#include <stddef.h>
#include <stdint.h>
#include "model/jitdump.h"

static void sink(void *ctx, const struct jt_jit_event *ev)
{
	volatile size_t *n = ctx;

	/* Touch every byte of the name: it must lie inside the input. */
	for (size_t i = 0; i < ev->name_len; i++)
		*n += (unsigned char)ev->name[i];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t cut = size ? data[0] % (size + 1) : 0, n = 0;
	struct jt_jitdump d;
	struct jt_perfmap m;

	jt_jitdump_init(&d);
	jt_jitdump_feed(&d, data, cut, sink, &n);
	jt_jitdump_feed(&d, data + cut, size - cut, sink, &n);
	jt_jitdump_free(&d);
	jt_perfmap_init(&m);
	jt_perfmap_feed(&m, data, cut, 1, 1, sink, &n);
	jt_perfmap_feed(&m, data + cut, size - cut, 2, 1, sink, &n);
	jt_perfmap_free(&m);
	return 0;
}
