/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#ifndef JT_AGENT_NETLIBS_H
#define JT_AGENT_NETLIBS_H

/*
 * libcurl (push) and libmicrohttpd (the HTTP server), opened by the agent
 * alone: linked, they and the 33 libraries they pull in (TLS, Kerberos,
 * LDAP) cost every command 7 ms of loading before main.
 */
#include <curl/curl.h>
#include <microhttpd.h>

/* What the agent calls, as (function, field). */
#define JT_CURL_FUNCS(X)                                                       \
	X(curl_global_init, global_init)                                       \
	X(curl_global_cleanup, global_cleanup)                                 \
	X(curl_easy_init, easy_init)                                           \
	X(curl_easy_setopt, easy_setopt)                                       \
	X(curl_easy_perform, easy_perform)                                     \
	X(curl_easy_getinfo, easy_getinfo)                                     \
	X(curl_easy_cleanup, easy_cleanup)                                     \
	X(curl_easy_escape, easy_escape)                                       \
	X(curl_free, free)                                                     \
	X(curl_slist_append, slist_append)                                     \
	X(curl_slist_free_all, slist_free_all)

#define JT_MHD_FUNCS(X)                                                        \
	X(MHD_start_daemon, start_daemon)                                      \
	X(MHD_stop_daemon, stop_daemon)                                        \
	X(MHD_get_connection_info, get_connection_info)                        \
	X(MHD_lookup_connection_value, lookup_connection_value)                \
	X(MHD_create_response_from_buffer, create_response_from_buffer)        \
	X(MHD_add_response_header, add_response_header)                        \
	X(MHD_queue_response, queue_response)                                  \
	X(MHD_destroy_response, destroy_response)

#define JT_NETLIBS_FIELD(fn, field) __typeof__(&fn) field;
struct jt_curl {
	JT_CURL_FUNCS(JT_NETLIBS_FIELD)
};
struct jt_mhd {
	JT_MHD_FUNCS(JT_NETLIBS_FIELD)
};
#undef JT_NETLIBS_FIELD

/* Filled by jt_netlibs_open; the agent calls nothing in them before. */
extern struct jt_curl jt_curl;
extern struct jt_mhd jt_mhd;

/*
 * Opens both libraries and finds every function; 0, or -1 with why
 * in err (the library, what dlopen or dlsym said).
 */
int jt_netlibs_open(char *err, size_t len);

#endif
