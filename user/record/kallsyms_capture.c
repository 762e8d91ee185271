// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * /proc/kallsyms at record time, text symbols only, compressed: kernel
 * samples resolve on another machine, or after a module unload.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "record/kallsyms_capture.h"

static int read_text_symbols(char **out, size_t *len)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	size_t cap = 1 << 20, n = 0;
	char line[512], *buf = malloc(cap);

	if (!f || !buf) {
		free(buf);
		if (f)
			fclose(f);
		return -errno;
	}
	/* One read per 64 KiB, not per 1 KiB: 120K lines and more. */
	setvbuf(f, NULL, _IOFBF, 64 << 10);
	while (fgets(line, sizeof(line), f)) {
		size_t l = strlen(line);
		const char *sp = memchr(line, ' ', l);

		/* Text, and weak text (W): a weak function left out would
		 * give its samples to the symbol before it. */
		if (!sp || !sp[1] || !strchr("tTwW", sp[1]))
			continue;
		if (n + l > cap) {
			char *b = realloc(buf, cap *= 2);

			if (!b)
				break;
			buf = b;
		}
		memcpy(buf + n, line, l);
		n += l;
	}
	fclose(f);
	*out = buf;
	*len = n;
	return 0;
}

int jt_kallsyms_capture(struct jt_writer *w)
{
	char *text;
	size_t len;
	uLongf zlen;
	Bytef *z;
	uint64_t hdr;
	int err = read_text_symbols(&text, &len);

	if (err)
		return err;
	/*
	 * Level 4: 5% larger than 6 (900 KB for 5.4 MB here), in half the
	 * time, at start-up that every recording waits for.
	 */
	zlen = compressBound(len);
	z = malloc(zlen);
	if (!z || compress2(z, &zlen, (Bytef *)text, len, 4) != Z_OK ||
	    sizeof(hdr) + zlen > JT_REC_MAX - 64) {
		free(z);
		free(text);
		return -E2BIG;
	}
	hdr = len;
	err = jt_writer_add(w, JT_REC_KALLSYMS, &hdr, sizeof(hdr), z, zlen);
	free(z);
	free(text);
	return err;
}
