// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <dlfcn.h>
#include <stdio.h>
#include "agent/netlibs.h"

/* The build gives the SONAMEs of the libraries it compiled against. */
#ifndef JT_CURL_SONAME
#define JT_CURL_SONAME "libcurl.so.4"
#endif
#ifndef JT_MHD_SONAME
#define JT_MHD_SONAME "libmicrohttpd.so.12"
#endif

struct jt_curl jt_curl;
struct jt_mhd jt_mhd;

static void *open_lib(const char *soname, char *err, size_t len)
{
	void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);

	if (!h)
		snprintf(err, len, "%s", dlerror());
	return h;
}

/* dlsym's void * to a function pointer: POSIX allows it; C does not say. */
static int sym(void *h, const char *soname, const char *name, void *fp,
	       char *err, size_t len)
{
	void *p = dlsym(h, name);

	if (!p) {
		snprintf(err, len, "%s: no %s", soname, name);
		return -1;
	}
	*(void **)fp = p;
	return 0;
}

#define JT_NETLIBS_SYM(fn, field)                                              \
	if (sym(h, soname, #fn, &lib->field, err, len))                        \
		return -1;

static int open_curl(struct jt_curl *lib, char *err, size_t len)
{
	static const char soname[] = JT_CURL_SONAME;
	void *h = open_lib(soname, err, len);

	if (!h)
		return -1;
	JT_CURL_FUNCS(JT_NETLIBS_SYM)
	return 0;
}

static int open_mhd(struct jt_mhd *lib, char *err, size_t len)
{
	static const char soname[] = JT_MHD_SONAME;
	void *h = open_lib(soname, err, len);

	if (!h)
		return -1;
	JT_MHD_FUNCS(JT_NETLIBS_SYM)
	return 0;
}

int jt_netlibs_open(char *err, size_t len)
{
	return open_curl(&jt_curl, err, len) || open_mhd(&jt_mhd, err, len) ?
		       -1 :
		       0;
}
