// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "agent/agent.h"
#include "agent/netlibs.h"
#include "agent/push.h"
#include "lib/clock.h"

struct pending {
	int64_t from;
	int64_t until;
	void *buf;
	size_t len;
	int tries;
	uint64_t not_before; /* CLOCK_MONOTONIC: the backoff */
};

struct jt_push {
	struct jt_agent *a;
	char *url;
	char *auth;
	pthread_t thread;
	pthread_cond_t cond; /* with a->lock */
	struct pending q[JT_PUSH_QUEUE];
	unsigned int head;
	unsigned int n;
	bool stop;
};

static struct pending *at(struct jt_push *p, unsigned int i)
{
	return &p->q[(p->head + i) % JT_PUSH_QUEUE];
}

/* Pyroscope's ingest: the profile's name says what and where. */
static char *ingest_url(struct jt_push *p, CURL *c, const struct pending *w)
{
	char name[160], *esc, *url;
	const char *sep = strchr(p->url, '?') ? "&" : "?";
	bool has_path = strstr(p->url, "/ingest") != NULL;
	size_t n;

	/*
	 * For pprof, Pyroscope takes the name before the labels as the
	 * service_name whole (.cpu is cut only for other formats): the
	 * scrape route's service_name="jittrace" and this one meet.
	 */
	snprintf(name, sizeof(name), "jittrace{host=%s}", p->a->host);
	esc = jt_curl.easy_escape(c, name, 0);
	if (!esc)
		return NULL;
	n = strlen(p->url) + strlen(esc) + 128;
	url = malloc(n);
	if (url)
		snprintf(url, n,
			 "%s%s%sname=%s&from=%lld&until=%lld&format=pprof"
			 "&spyName=jittrace",
			 p->url, has_path ? "" : "/ingest", sep, esc,
			 (long long)w->from, (long long)w->until);
	jt_curl.free(esc);
	return url;
}

/* The credentials: a bearer token as a header, else user:password. */
static struct curl_slist *with_auth(struct jt_push *p, CURL *c,
				    struct curl_slist *h)
{
	char *line;
	struct curl_slist *nh;

	if (strncmp(p->auth, "Bearer ", 7)) {
		jt_curl.easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		jt_curl.easy_setopt(c, CURLOPT_USERPWD, p->auth);
		return h;
	}
	if (asprintf(&line, "Authorization: %s", p->auth) < 0) {
		jt_curl.slist_free_all(h);
		return NULL;
	}
	nh = jt_curl.slist_append(h, line);
	free(line);
	if (!nh)
		jt_curl.slist_free_all(h);
	return nh;
}

static size_t discard(char *ptr, size_t size, size_t n, void *ctx)
{
	return size * n;
}

/*
 * 0 when the backend took it (2xx); -EAGAIN for what may pass later (no
 * answer, 429, 5xx); -EBADMSG when the backend refused this window (any
 * other answer): sent again, it would be refused again.
 */
static int post(struct jt_push *p, const struct pending *w, long timeout)
{
	CURL *c = jt_curl.easy_init();
	struct curl_slist *h = NULL;
	long code = 0;
	char *url;
	int err = -EAGAIN;

	if (!c)
		return -ENOMEM;
	url = ingest_url(p, c, w);
	h = jt_curl.slist_append(h, "Content-Type: application/octet-stream");
	if (h && p->auth)
		h = with_auth(p, c, h);
	if (url && h) {
		jt_curl.easy_setopt(c, CURLOPT_URL, url);
		jt_curl.easy_setopt(c, CURLOPT_POST, 1L);
		jt_curl.easy_setopt(c, CURLOPT_POSTFIELDS, w->buf);
		jt_curl.easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
				    (curl_off_t)w->len);
		jt_curl.easy_setopt(c, CURLOPT_HTTPHEADER, h);
		jt_curl.easy_setopt(c, CURLOPT_TIMEOUT, timeout);
		jt_curl.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
		jt_curl.easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
		jt_curl.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
		if (jt_curl.easy_perform(c) == CURLE_OK &&
		    !jt_curl.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code))
			err = code >= 200 && code < 300 ? 0 :
			      code == 429 || (code >= 500 && code < 600) ?
							  -EAGAIN :
							  -EBADMSG;
	}
	jt_curl.slist_free_all(h);
	free(url);
	jt_curl.easy_cleanup(c);
	return err;
}

/* 1 s, 2 s, 4 s, ... between tries of one window. */
static uint64_t backoff(int tries)
{
	return (1000000000ULL << (tries < 5 ? tries - 1 : 4));
}

static void drop_head(struct jt_push *p)
{
	free(at(p, 0)->buf);
	p->head = (p->head + 1) % JT_PUSH_QUEUE;
	p->n--;
}

static void wait_for(struct jt_push *p, uint64_t until)
{
	struct jt_agent *a = p->a;
	int64_t real = (int64_t)until + a->mono_to_real;
	struct timespec ts = { real / 1000000000LL, real % 1000000000LL };

	pthread_cond_timedwait(&p->cond, &a->lock, &ts);
}

/* Called with the lock; returns with it. */
static void try_head(struct jt_push *p)
{
	struct jt_agent *a = p->a;
	struct pending w = *at(p, 0);
	/* Stopping: one short try each, so SIGTERM ends in seconds. */
	long timeout = p->stop ? 2 : JT_PUSH_TIMEOUT;
	int err;

	pthread_mutex_unlock(&a->lock);
	err = post(p, &w, timeout);
	pthread_mutex_lock(&a->lock);
	/* Only this thread removes from the queue: the head is still w. */
	if (!err) {
		a->met.push_ok++;
		drop_head(p);
		return;
	}
	a->met.push_failed++;
	if (err == -EBADMSG) {
		a->met.push_rejected++;
		drop_head(p);
		return;
	}
	at(p, 0)->tries++;
	at(p, 0)->not_before = jt_mono_ns() + backoff(at(p, 0)->tries);
	if (at(p, 0)->tries >= JT_PUSH_TRIES || p->stop) {
		a->met.push_dropped++;
		drop_head(p);
	}
}

static void *run(void *arg)
{
	struct jt_push *p = arg;
	struct jt_agent *a = p->a;

	pthread_mutex_lock(&a->lock);
	while (!p->stop || p->n) {
		if (!p->n) {
			pthread_cond_wait(&p->cond, &a->lock);
			continue;
		}
		if (!p->stop && jt_mono_ns() < at(p, 0)->not_before) {
			wait_for(p, at(p, 0)->not_before);
			continue;
		}
		try_head(p);
		a->met.push_queued = p->n;
	}
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

struct jt_push *jt_push_start(struct jt_agent *a, const char *url, char *auth)
{
	struct jt_push *p = calloc(1, sizeof(*p));
	pthread_condattr_t ca;

	if (!p) {
		free(auth);
		return NULL;
	}
	p->a = a;
	p->auth = auth;
	p->url = strdup(url);
	/* Trailing slashes would give "//ingest". */
	while (p->url && strlen(p->url) > 1 &&
	       p->url[strlen(p->url) - 1] == '/')
		p->url[strlen(p->url) - 1] = 0;
	pthread_condattr_init(&ca);
	pthread_cond_init(&p->cond, &ca);
	if (!p->url || pthread_create(&p->thread, NULL, run, p)) {
		free(p->url);
		free(p->auth);
		free(p);
		return NULL;
	}
	return p;
}

void jt_push_enqueue(struct jt_push *p, int64_t from, int64_t until,
		     const void *buf, size_t len)
{
	struct jt_agent *a = p->a;
	void *copy = malloc(len);

	pthread_mutex_lock(&a->lock);
	if (!copy) {
		a->met.push_dropped++;
	} else if (p->n == JT_PUSH_QUEUE) {
		/* The head may be on the wire: the new window is dropped. */
		a->met.push_dropped++;
		free(copy);
	} else {
		memcpy(copy, buf, len);
		*at(p, p->n) = (struct pending){ from, until, copy, len, 0, 0 };
		p->n++;
		a->met.push_queued = p->n;
		pthread_cond_signal(&p->cond);
	}
	pthread_mutex_unlock(&a->lock);
}

void jt_push_stop(struct jt_push *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->a->lock);
	p->stop = true;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->a->lock);
	pthread_join(p->thread, NULL);
	while (p->n)
		drop_head(p);
	pthread_cond_destroy(&p->cond);
	free(p->url);
	free(p->auth);
	free(p);
}
