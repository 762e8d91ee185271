// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "lib/fmt.h"

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
