/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The capabilities jittrace uses when it runs without root (the agent's
 * systemd unit and daemonset), each with what it is for, as doctor says.
 */
#ifndef JT_CAPS_H
#define JT_CAPS_H

#include <stdbool.h>
#include <stddef.h>

struct jt_cap_use {
	int cap;
	const char *name;
	const char *what; /* what breaks without it */
	bool required;	  /* nothing loads without it */
};

extern const struct jt_cap_use jt_cap_uses[];
extern const size_t jt_ncap_uses;

/* Whether this process has cap in its effective set. */
bool jt_cap_effective(int cap);

#endif
