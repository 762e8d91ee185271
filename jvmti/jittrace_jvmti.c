// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libjittrace-jvmti.so: a JVMTI agent that writes a standard jitdump
 * (tools/perf/Documentation/jitdump-specification.txt), CLOCK_MONOTONIC
 * timestamps, for every method HotSpot compiles and every stub it
 * generates, with their line tables. Loaded at start
 * (-agentpath:libjittrace-jvmti.so) or into a running JVM (the attach
 * protocol's "load"), when it first replays what was compiled before.
 *
 * Freed code gets a record of its own, JIT_CODE_UNLOAD below: perf skips
 * record types it does not know, jittrace stops naming the code there.
 *
 * Options, comma-separated: dir=DIR (default $JITDUMPDIR, else /tmp).
 */
#include <errno.h>
#include <fcntl.h>
#include <jvmti.h>
#include <jvmticmlr.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "jt_jitdump.h"

static struct {
	pthread_mutex_t lock;
	int fd;
	void *marker;
	uint64_t code_index;
	int ready;
	jvmtiEnv *jvmti;
} g = { PTHREAD_MUTEX_INITIALIZER, -1 };

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* Whole records only: a reader may tail the file while it grows. */
static void emit(const struct iovec *iov, int n)
{
	size_t i, len;
	ssize_t w;

	for (i = 0; i < (size_t)n; i++) {
		for (len = 0; len < iov[i].iov_len; len += w) {
			w = write(g.fd, (const char *)iov[i].iov_base + len,
				  iov[i].iov_len - len);
			if (w <= 0 && errno != EINTR)
				return;
			if (w < 0)
				w = 0;
		}
	}
}

/* "Ljava/lang/String;" -> "java.lang.String", and the primitives. */
static size_t type_name(const char *sig, char *out, size_t room, int *used)
{
	static const struct {
		char c;
		const char *name;
	} prims[] = { { 'Z', "boolean" }, { 'B', "byte" },   { 'C', "char" },
		      { 'S', "short" },	  { 'I', "int" },    { 'J', "long" },
		      { 'F', "float" },	  { 'D', "double" }, { 'V', "void" } };
	size_t n = 0, i, dims = 0;

	while (sig[dims] == '[')
		dims++;
	*used = dims;
	if (sig[dims] == 'L') {
		const char *end = strchr(sig + dims, ';');

		if (!end)
			return 0;
		for (i = dims + 1; sig + i < end && n + 1 < room; i++)
			out[n++] = sig[i] == '/' ? '.' : sig[i];
		*used = end - sig + 1;
	} else {
		for (i = 0; i < sizeof(prims) / sizeof(prims[0]); i++)
			if (prims[i].c == sig[dims])
				break;
		if (i == sizeof(prims) / sizeof(prims[0]))
			return 0;
		n = snprintf(out, room, "%s", prims[i].name);
		if (n >= room)
			n = room - 1;
		*used = dims + 1;
	}
	for (i = 0; i < dims && n + 2 < room; i++) {
		out[n++] = '[';
		out[n++] = ']';
	}
	out[n] = 0;
	return n;
}

/* Hot.f1(long), as perf-map agents name methods. */
static void method_name(jmethodID m, char *out, size_t room)
{
	char *mname = NULL, *msig = NULL, *csig = NULL, t[256];
	jclass cls;
	size_t n = 0;
	int used, first = 1;
	const char *p;

	out[0] = 0;
	if ((*g.jvmti)->GetMethodDeclaringClass(g.jvmti, m, &cls) ||
	    (*g.jvmti)->GetClassSignature(g.jvmti, cls, &csig, NULL) ||
	    (*g.jvmti)->GetMethodName(g.jvmti, m, &mname, &msig, NULL))
		goto out;
	type_name(csig, t, sizeof(t), &used);
	n = snprintf(out, room, "%s.%s(", t, mname);
	for (p = msig + 1; *p && *p != ')' && n < room; p += used) {
		if (!type_name(p, t, sizeof(t), &used))
			break;
		n += snprintf(out + n, room - n, "%s%s", first ? "" : ", ", t);
		first = 0;
	}
	if (n < room)
		snprintf(out + n, room - n, ")");
out:
	(*g.jvmti)->Deallocate(g.jvmti, (unsigned char *)mname);
	(*g.jvmti)->Deallocate(g.jvmti, (unsigned char *)msig);
	(*g.jvmti)->Deallocate(g.jvmti, (unsigned char *)csig);
}

static void code_load(const char *name, const void *addr, jint size)
{
	struct jr_code_load r = {};
	struct iovec iov[3];

	r.p.id = JIT_CODE_LOAD;
	r.p.total_size = sizeof(r) + strlen(name) + 1 + size;
	r.pid = getpid();
	r.tid = syscall(SYS_gettid);
	r.vma = r.code_addr = (uintptr_t)addr;
	r.code_size = size;
	iov[0] = (struct iovec){ &r, sizeof(r) };
	iov[1] = (struct iovec){ (void *)name, strlen(name) + 1 };
	iov[2] = (struct iovec){ (void *)addr, size };
	pthread_mutex_lock(&g.lock);
	r.code_index = g.code_index++;
	r.p.timestamp = now_ns();
	emit(iov, 3);
	pthread_mutex_unlock(&g.lock);
}

/* Source lines of the compiled code, from the bytecode index map. */
static void debug_info(jmethodID m, jint map_len,
		       const jvmtiAddrLocationMap *map)
{
	jvmtiLineNumberEntry *lines = NULL;
	char *file = NULL, *csig = NULL;
	struct jr_code_debug_info r = {};
	struct debug_entry e;
	struct iovec *iov;
	jint nlines = 0, i, j, k = 0;
	jclass cls;

	if (map_len <= 0 ||
	    (*g.jvmti)->GetLineNumberTable(g.jvmti, m, &nlines, &lines) ||
	    (*g.jvmti)->GetMethodDeclaringClass(g.jvmti, m, &cls) ||
	    (*g.jvmti)->GetSourceFileName(g.jvmti, cls, &file))
		goto out;
	iov = calloc(1 + 2 * map_len, sizeof(*iov));
	if (!iov)
		goto out;
	struct debug_entry *ents = calloc(map_len, sizeof(*ents));

	if (!ents) {
		free(iov);
		goto out;
	}
	for (i = 0; i < map_len; i++) {
		jint line = 0;

		for (j = 0; j < nlines; j++)
			if (lines[j].start_location <= map[i].location)
				line = lines[j].line_number;
		e = (struct debug_entry){ (uintptr_t)map[i].start_address, line,
					  0 };
		ents[k] = e;
		iov[1 + 2 * k] = (struct iovec){ &ents[k], sizeof(e) };
		iov[2 + 2 * k] = (struct iovec){ file, strlen(file) + 1 };
		r.p.total_size += sizeof(e) + strlen(file) + 1;
		k++;
	}
	r.p.id = JIT_CODE_DEBUG_INFO;
	r.p.total_size += sizeof(r);
	r.code_addr = (uintptr_t)map[0].start_address;
	r.nr_entry = k;
	iov[0] = (struct iovec){ &r, sizeof(r) };
	pthread_mutex_lock(&g.lock);
	r.p.timestamp = now_ns();
	emit(iov, 1 + 2 * k);
	pthread_mutex_unlock(&g.lock);
	free(ents);
	free(iov);
out:
	(*g.jvmti)->Deallocate(g.jvmti, (unsigned char *)lines);
	(*g.jvmti)->Deallocate(g.jvmti, (unsigned char *)file);
	(*g.jvmti)->Deallocate(g.jvmti, (unsigned char *)csig);
}

/* A growing buffer of one record's entries. */
struct vec {
	char *b;
	size_t n;
	size_t cap;
};

static int vput(struct vec *v, const void *p, size_t n)
{
	if (v->n + n > v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 4096;
		char *b;

		while (cap < v->n + n)
			cap *= 2;
		if (!(b = realloc(v->b, cap)))
			return -1;
		v->b = b;
		v->cap = cap;
	}
	memcpy(v->b + v->n, p, n);
	v->n += n;
	return 0;
}

/*
 * HotSpot's compile info: for each pc with a debug record, the methods
 * on the compile-time stack, the inlined ones first, the compiled method
 * last. Those inlined are what a profile needs to name frames inside
 * inlined code.
 */
static void inline_info(const void *compile_info, const void *code)
{
	const jvmtiCompiledMethodLoadRecordHeader *h = compile_info;
	struct jr_code_inline r = {};
	struct vec v = {};
	struct iovec iov[2];
	char name[1024];
	jint i, k;

	for (; h; h = h->next) {
		const jvmtiCompiledMethodLoadInlineRecord *in = (const void *)h;

		if (h->kind != JVMTI_CMLR_INLINE_INFO)
			continue;
		for (i = 0; i < in->numpcs; i++) {
			const PCStackInfo *pc = &in->pcinfo[i];
			uint64_t addr = (uintptr_t)pc->pc;
			uint32_t depth[2] = { pc->numstackframes - 1, 0 };

			if (pc->numstackframes < 2)
				continue;
			if (vput(&v, &addr, 8) || vput(&v, depth, 8))
				goto out;
			for (k = 0; k < pc->numstackframes - 1; k++) {
				method_name(pc->methods[k], name, sizeof(name));
				if (vput(&v, name, strlen(name) + 1))
					goto out;
			}
			r.nr_entry++;
		}
	}
	if (!r.nr_entry)
		goto out;
	r.p.id = JIT_CODE_INLINE;
	r.p.total_size = sizeof(r) + v.n;
	r.code_addr = (uintptr_t)code;
	iov[0] = (struct iovec){ &r, sizeof(r) };
	iov[1] = (struct iovec){ v.b, v.n };
	pthread_mutex_lock(&g.lock);
	r.p.timestamp = now_ns();
	emit(iov, 2);
	pthread_mutex_unlock(&g.lock);
out:
	free(v.b);
}

static void JNICALL on_load(jvmtiEnv *jvmti, jmethodID m, jint size,
			    const void *addr, jint map_len,
			    const jvmtiAddrLocationMap *map,
			    const void *compile_info)
{
	char name[1024];

	method_name(m, name, sizeof(name));
	if (!name[0])
		snprintf(name, sizeof(name), "[compiled %p]", addr);
	debug_info(m, map_len, map);
	inline_info(compile_info, addr);
	code_load(name, addr, size);
}

static void JNICALL on_unload(jvmtiEnv *jvmti, jmethodID m, const void *addr)
{
	struct jr_code_unload r = {};
	struct iovec iov = { &r, sizeof(r) };

	r.p.id = JIT_CODE_UNLOAD;
	r.p.total_size = sizeof(r);
	r.pid = getpid();
	r.tid = syscall(SYS_gettid);
	r.code_addr = (uintptr_t)addr;
	pthread_mutex_lock(&g.lock);
	r.p.timestamp = now_ns();
	emit(&iov, 1);
	pthread_mutex_unlock(&g.lock);
}

static void JNICALL on_stub(jvmtiEnv *jvmti, const char *name, const void *addr,
			    jint size)
{
	code_load(name, addr, size);
}

static int open_in(const char *dir, char *path, size_t len)
{
	snprintf(path, len, "%s/jit-%d.dump", dir, (int)getpid());
	return open(path, O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC | O_NOFOLLOW,
		    0644);
}

/*
 * jit-PID.dump in the directory asked for, else /tmp. A file of that
 * name another user left there (a process of theirs had this pid), or a
 * link, cannot be ours: then a fresh directory of our own under /tmp,
 * as perf's agent always makes one. Readers find the file by its
 * marker mapping, wherever it is.
 */
static int open_dump_file(const char *dir, char *path, size_t len)
{
	char own[] = "/tmp/jittrace-jit-XXXXXX";
	int fd = open_in(dir, path, len), err = errno;

	if (fd >= 0)
		return fd;
	if (!mkdtemp(own)) {
		errno = err;
		return -1;
	}
	fprintf(stderr, "jittrace-jvmti: %s: %s; writing %s/jit-%d.dump\n",
		path, strerror(err), own, (int)getpid());
	return open_in(own, path, len);
}

static int open_dump(const char *options)
{
	struct jitheader h = { JITHEADER_MAGIC, JITHEADER_VERSION, sizeof(h),
			       JT_ELF_MACH };
	const char *dir = getenv("JITDUMPDIR");
	char path[4096];
	struct iovec iov = { &h, sizeof(h) };

	if (options && !strncmp(options, "dir=", 4))
		dir = options + 4;
	g.fd = open_dump_file(dir && *dir ? dir : "/tmp", path, sizeof(path));
	if (g.fd < 0) {
		fprintf(stderr, "jittrace-jvmti: %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	h.pid = getpid();
	h.timestamp = now_ns();
	emit(&iov, 1);
	/* The marker every jitdump reader looks for: the file, mapped exec. */
	g.marker = mmap(NULL, sysconf(_SC_PAGESIZE), PROT_READ | PROT_EXEC,
			MAP_PRIVATE, g.fd, 0);
	return 0;
}

/*
 * A JVM we were loaded into at start must run whatever becomes of us:
 * only an attach (whose client reports it) hears of a failure.
 */
static jint failed(int attached, const char *what)
{
	fprintf(stderr, "jittrace-jvmti: %s: no jitdump from this JVM\n", what);
	return attached ? JNI_ERR : JNI_OK;
}

static jint start(JavaVM *vm, const char *options, int attached)
{
	jvmtiCapabilities caps = {};
	jvmtiEventCallbacks cb = {};
	jvmtiEnv *jvmti;

	pthread_mutex_lock(&g.lock);
	if (g.ready) {
		pthread_mutex_unlock(&g.lock);
		return 0; /* loaded twice: the first one keeps writing */
	}
	g.ready = 1;
	pthread_mutex_unlock(&g.lock);
	if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_1_2))
		return failed(attached, "no JVMTI 1.2");
	g.jvmti = jvmti;
	caps.can_generate_compiled_method_load_events = 1;
	caps.can_get_source_file_name = 1;
	caps.can_get_line_numbers = 1;
	if ((*jvmti)->AddCapabilities(jvmti, &caps))
		return failed(attached, "capabilities refused");
	if (open_dump(options))
		return failed(attached, "cannot write the jitdump");
	cb.CompiledMethodLoad = on_load;
	cb.CompiledMethodUnload = on_unload;
	cb.DynamicCodeGenerated = on_stub;
	if ((*jvmti)->SetEventCallbacks(jvmti, &cb, sizeof(cb)) ||
	    (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE,
					       JVMTI_EVENT_COMPILED_METHOD_LOAD,
					       NULL) ||
	    (*jvmti)->SetEventNotificationMode(
		    jvmti, JVMTI_ENABLE, JVMTI_EVENT_COMPILED_METHOD_UNLOAD,
		    NULL) ||
	    (*jvmti)->SetEventNotificationMode(
		    jvmti, JVMTI_ENABLE, JVMTI_EVENT_DYNAMIC_CODE_GENERATED,
		    NULL))
		return failed(attached, "events refused");
	/* Code compiled before we came, named from now on. */
	if (attached) {
		(*jvmti)->GenerateEvents(jvmti,
					 JVMTI_EVENT_DYNAMIC_CODE_GENERATED);
		(*jvmti)->GenerateEvents(jvmti,
					 JVMTI_EVENT_COMPILED_METHOD_LOAD);
	}
	return 0;
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved)
{
	return start(vm, options, 0);
}

JNIEXPORT jint JNICALL Agent_OnAttach(JavaVM *vm, char *options, void *reserved)
{
	return start(vm, options, 1);
}

JNIEXPORT void JNICALL Agent_OnUnload(JavaVM *vm)
{
	if (g.marker && g.marker != MAP_FAILED)
		munmap(g.marker, sysconf(_SC_PAGESIZE));
	if (g.fd >= 0)
		close(g.fd);
}
