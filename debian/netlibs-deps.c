// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Never installed. The agent opens libcurl and libmicrohttpd itself
 * (user/agent/netlibs.c), so no program the package ships names them:
 * dpkg-shlibdeps reads their dependency, with the versions the functions
 * the agent calls need, off this one, which links them (debian/rules).
 */
#include "agent/netlibs.h"

#define ADDR(fn, field) (void *)fn,

/* Global, so no compiler or --as-needed drops what it names. */
void *const jt_netlibs_used[] = { JT_CURL_FUNCS(ADDR) JT_MHD_FUNCS(ADDR) };

int main(void)
{
	return !jt_netlibs_used[0];
}
