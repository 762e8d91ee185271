// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdlib.h>
#include <string.h>
#include "lib/fmt.h"
#include "lib/utf8.h"

const char *jt_prot_str(uint32_t prot, int shared, char buf[5])
{
	buf[0] = prot & 1 ? 'r' : '-';
	buf[1] = prot & 2 ? 'w' : '-';
	buf[2] = prot & 4 ? 'x' : '-';
	buf[3] = shared ? 's' : 'p';
	buf[4] = 0;
	return buf;
}

const char *jt_time_str(uint64_t ns, char buf[32])
{
	snprintf(buf, 32, "%llu.%09llu", (unsigned long long)(ns / 1000000000),
		 (unsigned long long)(ns % 1000000000));
	return buf;
}

struct tx_slot {
	char *buf;
	size_t cap;
};

static _Thread_local struct tx_slot tx_slots[JT_TX_SLOTS];
static _Thread_local unsigned int tx_next;

/* Plain printable ASCII and valid UTF-8 past the C1 controls pass. */
static size_t tx_pass(const unsigned char *s, size_t n)
{
	size_t len;

	if (s[0] >= 0x20 && s[0] < 0x7f && s[0] != '\\')
		return 1;
	if (s[0] < 0x80 || !(len = jt_utf8_len(s, n)))
		return 0;
	/* U+0080..U+009F: 0xc2 0x80..0x9f, the 8-bit controls (CSI...). */
	return s[0] == 0xc2 && s[1] < 0xa0 ? 0 : len;
}

const char *jt_tx(const char *s)
{
	struct tx_slot *t = &tx_slots[tx_next++ % JT_TX_SLOTS];
	const unsigned char *u = (const unsigned char *)s;
	size_t n, i = 0, o = 0, len;
	char *nb;

	if (!s)
		return NULL;
	/* Most names pass as they are: no copy for them. */
	for (n = 0; u[n] >= 0x20 && u[n] < 0x7f && u[n] != '\\'; n++)
		;
	if (!u[n])
		return s;
	n += strlen(s + n);
	if (t->cap < 4 * n + 1) {
		nb = realloc(t->buf, 4 * n + 1);
		if (!nb)
			return "[no memory]";
		t->buf = nb;
		t->cap = 4 * n + 1;
	}
	while (i < n) {
		if ((len = tx_pass(u + i, n - i))) {
			memcpy(t->buf + o, s + i, len);
			o += len;
			i += len;
		} else if (u[i] == '\\') {
			memcpy(t->buf + o, "\\\\", 2);
			o += 2;
			i++;
		} else {
			snprintf(t->buf + o, 5, "\\x%02x", u[i++]);
			o += 4;
		}
	}
	t->buf[o] = 0;
	return t->buf;
}

const char *jt_bounded_str(char *buf, size_t size, const char *s, size_t len)
{
	if (!len)
		return NULL;
	snprintf(buf, size, "%.*s", (int)strnlen(s, len), s);
	return buf;
}
