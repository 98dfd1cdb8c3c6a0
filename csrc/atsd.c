/*
 * atsd.c - the core's common ground: its ABI version, and the signals every release holds.
 */
#define _GNU_SOURCE
#include "atsd.h"

#include <pthread.h>
#include <signal.h>

void atsd_hold_signals(sigset_t *old)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, old);
}

void atsd_release_signals(const sigset_t *old)
{
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

int atsd_abi_version(void)
{
	return ATSD_ABI_VERSION;
}
