// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdlib.h>
#include <string.h>
#include "lib/jt_file.h"
#include "model/cfistore.h"
#include "unwind/cfi.h"

struct cfi_obj {
	uint8_t id[20];
	uint8_t id_len;
	struct {
		unsigned char *buf;
		uint64_t addr;
		uint64_t total;
		uint64_t have; /* pieces come in order */
	} s[JT_CFI_NKINDS];
};

static uint64_t id_hash(const unsigned char *id, size_t len)
{
	uint64_t h = len;
	size_t i;

	for (i = 0; i < len; i++)
		h = jt_hash_u64(h ^ id[i]);
	return h;
}

struct id_key {
	const unsigned char *id;
	size_t len;
};

static bool obj_eq(const void *val, const void *key)
{
	const struct cfi_obj *o = val;
	const struct id_key *k = key;

	return o->id_len == k->len && !memcmp(o->id, k->id, k->len);
}

static struct cfi_obj *obj_of(struct jt_cfistore *c, const unsigned char *id,
			      size_t len, bool make)
{
	struct id_key k = { id, len };
	uint64_t h = id_hash(id, len);
	struct cfi_obj *o = jt_hash_find(&c->objs, h, obj_eq, &k);

	if (o || !make)
		return o;
	o = calloc(1, sizeof(*o));
	if (!o || jt_hash_add(&c->objs, h, o)) {
		free(o);
		return NULL;
	}
	memcpy(o->id, id, len);
	o->id_len = len;
	return o;
}

void jt_cfistore_add(struct jt_cfistore *c, const void *rec, size_t len)
{
	const struct jt_cfi_rec *r = rec;
	size_t piece = len - sizeof(*r);
	struct cfi_obj *o;

	if (len < sizeof(*r) || !r->build_id_len || r->build_id_len > 20 ||
	    r->kind >= JT_CFI_NKINDS || !r->total ||
	    r->total > JT_CFI_SECTION_MAX || r->offset > r->total ||
	    piece > r->total - r->offset ||
	    !(o = obj_of(c, r->build_id, r->build_id_len, true))) {
		c->bad++;
		return;
	}
	if (!o->s[r->kind].buf) {
		if (r->offset || !(o->s[r->kind].buf = malloc(r->total))) {
			c->bad++;
			return;
		}
		o->s[r->kind].total = r->total;
		o->s[r->kind].addr = r->addr;
		c->bytes += r->total;
	}
	/* A second copy of the same object (another recorder's) is skipped. */
	if (o->s[r->kind].total != r->total || o->s[r->kind].addr != r->addr ||
	    r->offset != o->s[r->kind].have) {
		if (o->s[r->kind].have != o->s[r->kind].total)
			c->bad++;
		return;
	}
	memcpy(o->s[r->kind].buf + r->offset, r + 1, piece);
	o->s[r->kind].have += piece;
}

struct jt_cfi *jt_cfistore_get(struct jt_cfistore *c, const unsigned char *id,
			       size_t id_len)
{
	struct cfi_obj *o = id_len ? obj_of(c, id, id_len, false) : NULL;
	struct jt_cfi_sect s[JT_CFI_NKINDS] = {};
	int k;

	if (!o)
		return NULL;
	for (k = 0; k < JT_CFI_NKINDS; k++) {
		if (o->s[k].have != o->s[k].total)
			return NULL;
		s[k] = (struct jt_cfi_sect){ o->s[k].buf, o->s[k].total,
					     o->s[k].addr };
	}
	return jt_cfi_new(s);
}

void jt_cfistore_free(struct jt_cfistore *c)
{
	size_t i;
	int k;

	jt_hash_for_each (&c->objs, i) {
		struct cfi_obj *o = c->objs.e[i].val;

		for (k = 0; k < JT_CFI_NKINDS; k++)
			free(o->s[k].buf);
		free(o);
	}
	jt_hash_free(&c->objs);
	memset(c, 0, sizeof(*c));
}
