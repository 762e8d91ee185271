// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Global functions of the legacy object (kernels before 5.17), defined
 * once for all of its programs: the verifier checks a global function
 * once, on its own, where a static one is checked again at every call.
 * Before 5.12 a global function takes only scalars, so the state it
 * works on is in the per-CPU scratch.
 */
#include "common.bpf.h"

#ifdef JT_LEGACY
__noinline int jt_path_step_global(__u32 i)
{
	struct jt_scratch *s = jt_scratch();

	if (!s)
		return 1;
	return jt_path_step(i, &s->walk);
}
#endif

char LICENSE[] SEC("license") = "Dual BSD/GPL";
