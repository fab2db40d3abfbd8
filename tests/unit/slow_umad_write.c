/*
 * Test-only preload for tests/unit/test_umadshim.py, placed between the shim and umad2sim
 * (LD_PRELOAD=shim:this:umad2sim): a write to a umad fd returns SLOW_MS after umad2sim has
 * sent it to ibsim. The reply is then read (by another thread) before the writer's write()
 * returns, as happens to OpenSM's sender on a loaded machine.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <unistd.h>

#define SLOW_MS 150

ssize_t write(int fd, const void *buf, size_t count)
{
	static ssize_t (*next_write)(int, const void *, size_t);
	ssize_t n;

	if (!next_write)
		next_write = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
	n = next_write(fd, buf, count);
	if (fd >= 1024 && fd < 2048) /* umad2sim's fake umad fds */
		usleep(SLOW_MS * 1000);
	return n;
}
