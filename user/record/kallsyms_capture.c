// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include "record/kallsyms_capture.h"

#define CHUNK_BYTES (64 << 10)

/* Deflate what zs has in: all of it, and with Z_FINISH the stream's end. */
static int deflate_in(struct jt_kallsyms_capture *c, int flush)
{
	int ret;

	do {
		if (!c->zs.avail_out) {
			size_t cap = c->z_cap ? c->z_cap * 2 : 1 << 20;
			unsigned char *z = realloc(c->z, cap);

			if (!z)
				return -ENOMEM;
			c->z = z;
			c->z_cap = cap;
			c->zs.next_out = z + c->zs.total_out;
			c->zs.avail_out = cap - c->zs.total_out;
		}
		ret = deflate(&c->zs, flush);
		if (ret == Z_STREAM_ERROR)
			return -EIO;
	} while (c->zs.avail_in || !c->zs.avail_out ||
		 (flush == Z_FINISH && ret != Z_STREAM_END));
	return 0;
}

static int deflate_chunk(struct jt_kallsyms_capture *c, int flush)
{
	int err;

	c->zs.next_in = (Bytef *)c->chunk;
	c->zs.avail_in = c->chunk_len;
	err = deflate_in(c, flush);
	c->chunk_len = 0;
	return err;
}

/* l is at most a line: less than a chunk. */
static int append(struct jt_kallsyms_capture *c, const char *s, size_t l)
{
	int err = 0;

	if (c->chunk_len + l > CHUNK_BYTES)
		err = deflate_chunk(c, Z_NO_FLUSH);
	if (err)
		return err;
	memcpy(c->chunk + c->chunk_len, s, l);
	c->chunk_len += l;
	return 0;
}

static int read_text_symbols(struct jt_kallsyms_capture *c)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	char line[512];
	int err = 0;

	if (!f)
		return -errno;
	/* One read per 64 KiB, not per 1 KiB: 120K lines and more. */
	setvbuf(f, NULL, _IOFBF, 64 << 10);
	while (!err && fgets(line, sizeof(line), f)) {
		size_t l = strlen(line);
		const char *sp = memchr(line, ' ', l);

		/* Text, and weak text (W): a weak function left out would
		 * give its samples to the symbol before it. */
		if (sp && sp[1] && strchr("tTwW", sp[1]))
			err = append(c, line, l);
	}
	fclose(f);
	return err;
}

static void *reader(void *arg)
{
	struct jt_kallsyms_capture *c = arg;

	c->err = read_text_symbols(c);
	return NULL;
}

/*
 * Level 4: 5% larger than 6 (900 KB for 5.4 MB here), in half the time.
 * Deflated in the reader thread, it is off the start-up every recording
 * waits for (40 ms of it when compressed whole after the join).
 */
int jt_kallsyms_start(struct jt_kallsyms_capture *c)
{
	memset(c, 0, sizeof(*c));
	c->chunk = malloc(CHUNK_BYTES);
	c->zs_ready = c->chunk && deflateInit(&c->zs, 4) == Z_OK;
	if (!c->zs_ready) {
		c->err = -ENOMEM;
		return c->err;
	}
	c->started = !pthread_create(&c->thread, NULL, reader, c);
	return c->started ? 0 : -EAGAIN;
}

static void drop(struct jt_kallsyms_capture *c)
{
	if (c->zs_ready)
		deflateEnd(&c->zs);
	free(c->chunk);
	free(c->z);
	memset(c, 0, sizeof(*c));
}

/* The name the kernel gives function i of a program: bpf_get_prog_name. */
static void prog_sym(char *buf, size_t len, const uint8_t *tag,
		     const char *name)
{
	int n = snprintf(buf, len, "bpf_prog_");
	int k;

	for (k = 0; k < BPF_TAG_SIZE; k++)
		n += snprintf(buf + n, len - n, "%02x", tag[k]);
	if (name && *name)
		snprintf(buf + n, len - n, "_%s", name);
}

/* Each function of the program at fd, as /proc/kallsyms lists it. */
static int add_prog(struct jt_kallsyms_capture *c, int fd)
{
	struct bpf_prog_info info = {};
	uint32_t len = sizeof(info), i, nfn;
	struct bpf_func_info *fi = NULL;
	uint64_t *addrs = NULL;
	uint32_t *lens = NULL;
	uint8_t(*tags)[BPF_TAG_SIZE] = NULL;
	struct btf *btf = NULL;
	char sym[256], line[320];
	int err = -ENOMEM;

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	nfn = info.nr_jited_ksyms;
	if (!nfn)
		return 0; /* not JITed, or addresses hidden from us */
	addrs = calloc(nfn, sizeof(*addrs));
	tags = calloc(nfn, sizeof(*tags));
	fi = calloc(nfn, sizeof(*fi));
	lens = calloc(nfn, sizeof(*lens));
	if (!addrs || !tags || !fi || !lens)
		goto out;
	info = (struct bpf_prog_info){
		.nr_jited_ksyms = nfn,
		.jited_ksyms = (uintptr_t)addrs,
		.nr_jited_func_lens = nfn,
		.jited_func_lens = (uintptr_t)lens,
		.nr_prog_tags = nfn,
		.prog_tags = (uintptr_t)tags,
		.nr_func_info = nfn,
		.func_info_rec_size = sizeof(*fi),
		.func_info = (uintptr_t)fi,
	};
	len = sizeof(info);
	err = bpf_obj_get_info_by_fd(fd, &info, &len) ? -errno : 0;
	if (err)
		goto out;
	if (info.nr_func_info == nfn && info.btf_id)
		btf = btf__load_from_kernel_by_id(info.btf_id);
	for (i = 0; i < nfn && i < info.nr_prog_tags && !err; i++) {
		const struct btf_type *t =
			btf ? btf__type_by_id(btf, fi[i].type_id) : NULL;

		/* The main function goes by the program's tag, the others
		 * by their own. */
		prog_sym(sym, sizeof(sym), i ? tags[i] : info.tag,
			 t  ? btf__name_by_offset(btf, t->name_off) :
			 !i ? info.name :
			      NULL);
		/* The length too, which /proc/kallsyms does not give: the
		 * last program of a pack is followed by free space. */
		snprintf(line, sizeof(line), "%016llx t %s\t[bpf]\t%u\n",
			 (unsigned long long)addrs[i], sym,
			 i < info.nr_jited_func_lens ? lens[i] : 0);
		err = append(c, line, strlen(line));
	}
	btf__free(btf);
out:
	free(addrs);
	free(lens);
	free(tags);
	free(fi);
	return err;
}

void jt_kallsyms_abandon(struct jt_kallsyms_capture *c)
{
	if (c->started)
		pthread_join(c->thread, NULL);
	drop(c);
}

int jt_kallsyms_finish(struct jt_kallsyms_capture *c, struct jt_writer *w,
		       const int *prog_fds, size_t n)
{
	uint64_t hdr;
	size_t i;
	int err;

	if (c->started)
		pthread_join(c->thread, NULL);
	else if (!c->err)
		c->err = read_text_symbols(c);
	err = c->err;
	for (i = 0; i < n && !err; i++)
		if (prog_fds[i] >= 0)
			err = add_prog(c, prog_fds[i]);
	err = err ?: deflate_chunk(c, Z_FINISH);
	if (!err && sizeof(hdr) + c->zs.total_out > JT_REC_MAX - 64)
		err = -E2BIG;
	hdr = c->zs.total_in;
	if (!err)
		err = jt_writer_add(w, JT_REC_KALLSYMS, &hdr, sizeof(hdr), c->z,
				    c->zs.total_out);
	drop(c);
	return err;
}
