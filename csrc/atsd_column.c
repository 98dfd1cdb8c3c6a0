/*
 * atsd_column.c - `atsdbench stat`'s reader: numbers read exactly as FreeBSD ministat reads them.
 * See atsd.h (atsd_read_column).
 */
#define _GNU_SOURCE
#include "atsd.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <langinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * strtod's value for the plain decimals data files are made of, without strtod's arbitrary-precision
 * arithmetic (80% of the reader's instructions): a whole token [+-]D[.D][(e|E)[+-]D] of at most 19
 * digits, whose digits M are at most 2^53 and whose decimal exponent e is within +-22, is M * 10^e
 * or M / 10^-e: one IEEE operation on two exact doubles, rounded once, as strtod rounds (Clinger's
 * fast path).  Returns 0 for anything else (hex, inf, nan, more digits, a stray byte), which strtod
 * then reads as before.
 */
static int read_decimal(const char *s, double *out)
{
#if FLT_EVAL_METHOD == 0
	static const double pow10[] = {
		1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
		1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
	};
	uint64_t m = 0;
	int neg = 0, digits = 0, scale = 0, e = 0, eneg = 0, edigits = 0;
	double d;

	if (*s == '+' || *s == '-')
		neg = *s++ == '-';
	for (; *s >= '0' && *s <= '9'; s++, digits++)
		m = m * 10 + (uint64_t)(*s - '0');  /* wraps past 19 digits: refused below */
	if (*s == '.')
		for (s++; *s >= '0' && *s <= '9'; s++, digits++, scale++)
			m = m * 10 + (uint64_t)(*s - '0');
	if (digits == 0 || digits > 19 || m > (UINT64_C(1) << 53))
		return 0;
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			eneg = *s++ == '-';
		for (; *s >= '0' && *s <= '9' && edigits < 4; s++, edigits++)
			e = e * 10 + (*s - '0');
		if (edigits == 0)
			return 0;
	}
	if (*s != '\0')
		return 0;
	e = (eneg ? -e : e) - scale;
	if (e < -22 || e > 22)
		return 0;
	d = e < 0 ? (double)m / pow10[-e] : (double)m * pow10[e];
	*out = neg ? -d : d;
	return 1;
#else
	(void)s;
	(void)out;
	return 0;
#endif
}

int64_t atsd_read_column(const char *buf, uint64_t len, int32_t column, const char *delim,
			 double *out, uint64_t cap, int64_t *bad_line)
{
	char line[8192];  /* BUFSIZ on glibc: ministat's fgets buffer */
	uint64_t pos = 0, n = 0;
	int64_t lineno = 0;
	/* the fast path spells the decimal point '.', as strtod does in the C locale (ministat's) */
	const int plain = strcmp(nl_langinfo(RADIXCHAR), ".") == 0;

	while (pos < len) {
		size_t k = 0, i;
		char *t, *p, *save = NULL;
		int col;
		double d;

		/* fgets: up to sizeof(line) - 1 bytes, through the first newline */
		const char *nl;
		k = len - pos < sizeof(line) - 1 ? (size_t)(len - pos) : sizeof(line) - 1;
		nl = memchr(buf + pos, '\n', k);
		if (nl)
			k = (size_t)(nl - (buf + pos)) + 1;
		memcpy(line, buf + pos, k);
		pos += k;
		line[k] = '\0';
		lineno++;
		i = strlen(line);
		while (i > 0 && isspace((unsigned char)line[i - 1]))
			line[--i] = '\0';
		for (col = 1, t = strtok_r(line, delim, &save); t != NULL && *t != '#';
		     col++, t = strtok_r(NULL, delim, &save)) {
			if (col == column)
				break;
		}
		if (t == NULL || *t == '#')
			continue;
		if (!plain || !read_decimal(t, &d)) {
			d = strtod(t, &p);
			if (p != NULL && *p != '\0') {
				*bad_line = lineno;
				return -EINVAL;
			}
		}
		if (n == cap)
			return -ENOSPC;
		out[n++] = d;
	}
	*bad_line = lineno;  /* the reads made: where a caller reading a stream in pieces goes on counting */
	return (int64_t)n;
}
