/*
 * railyard's umad shim for the ibsim lab: MAD timeouts as the kernel's ib_umad gives them, and
 * a bounded wait for one of ibsim's client slots.
 *
 * Preloaded ahead of umad2sim (LD_PRELOAD=librailyard_umad.so:libumad2sim.so), so every
 * open/close/read/write/poll of a process reaches this file first and umad2sim next (dlsym
 * RTLD_NEXT). Written from the behaviour of libibumad (umad_send writes a struct ib_user_mad
 * with timeout_ms and retries ahead of the MAD), of the kernel's ib_umad (a send with a timeout
 * that gets no response is resent `retries` times, then handed back to the reader as the
 * header plus the first 24 bytes of the MAD, status ETIMEDOUT) and of umad2sim (fake umad fds
 * from 1024, issm fds from 2048; a send is forwarded to ibsim and nothing ever times it out).
 *
 * 1. MAD timeouts. A request written to a umad fd with timeout_ms > 0 is remembered (class and
 *    the low 32 bits of its TID, as OpenSM and libibmad match them) before umad2sim sends it,
 *    and its timeout starts when the write returns. A response, or ibsim's
 *    own error reply (status set), forgets it. When the deadline passes the MAD is resent while
 *    retries remain; then the reader gets the timed-out send back, as from ib_umad. A reply
 *    that comes after its request timed out is dropped (ib_umad finds no send for it either).
 *    poll() on a umad fd waits in slices of at most SLICE_MS, so a reader blocked with no
 *    timeout (OpenSM's receiver thread) still sees a send time out.
 * 2. Client slots. ibsim serves IBSIM_MAX_CLIENTS (10, compiled in) clients at once and
 *    refuses the next CONNECT; umad2sim then exits ("connect failed"). A refused CONNECT is
 *    sent again until a slot frees up or RAILYARD_SIM_CONNECT_WAIT seconds (default 60) pass.
 *    A request that found no ibsim listening (ECONNREFUSED, "ctl failed(read)") is asked
 *    again within the same waits. A control request ibsim never answers (ibsim gone) fails
 *    after RAILYARD_SIM_CTL_TIMEOUT seconds (default 10) instead of blocking the tool forever.
 * 3. SMP guard. A client that registers as its port's SM (SIM_SET_ISSM) without an SMP agent
 *    (the ping checks' `ibping -S`) gets the MASTER's SMInfo from ibsim, and umad2sim's
 *    receiver thread segfaulted on it (no queue for the class). The shim registers both SMP
 *    classes for such a process and drops what reaches them, as the kernel would deliver none;
 *    it does so at the process's first look at the simulated device (open, opendir, scandir),
 *    since the SMInfo follows the attach at once. umad2sim starts its receiver thread as soon
 *    as it is attached, before it even marks its agent table empty, and then writes its sysfs
 *    tree: an SMInfo arriving in that window (OpenSM answers the IsSM trap at once) met no
 *    agent and crashed the process (gdb on a core: the receiver in pthread_mutex_lock(0x30)
 *    while the main thread was still in umad2sim's open). So in such a process the receiver
 *    umad2sim starts (its pthread_create) waits at a gate until the guard's agents are
 *    registered (at most GATE_MS, so a tool never hangs on it).
 * 4. Detach on SIGTERM. ibsim never notices a client die: a tool stopped by a signal (the
 *    `timeout` that bounds it, the health check's stop, systemd) keeps its slot, and umad2sim
 *    detaches only in its exit handler, which a signal's default action skips. Once attached,
 *    a process that left SIGTERM, SIGINT or SIGHUP at their default action gets a handler that
 *    sends ibsim the DISCONNECT umad2sim would have sent, then dies of the signal as before.
 *    (A SIGKILLed process cannot detach: the lab's reaper, fabric/lab/reaper.py, drops it.)
 * 5. MADs for a class without an agent. ib_umad drops a MAD no agent of the process registered
 *    for. umad2sim's receiver looks up the class's queue and locks its mutex without checking
 *    that the queue exists (NULL + 0x30): the process dies (dmesg "segfault at 40 ... in libc",
 *    seen at 32 nodes for perfquery, sminfo, smpquery and ibstat once slots were reused: a new
 *    client gets what ibsim still had queued for the slot's previous one). The shim interposes
 *    pthread_mutex_lock/unlock: a mutex address below one page is refused with EINVAL, so
 *    umad2sim logs "Empty fd_data" and drops the MAD, as the kernel would. Any other address
 *    goes to the real function.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define UMAD_FD_FIRST 1024 /* umad2sim's fake umad fds: 1024 + 8 * device + index */
#define UMAD_FD_END 2048   /* ... and its issm fds from here */
#define MAD_HDR_LEN 24     /* IB_MGMT_MAD_HDR: what ib_umad returns of a timed-out send */
#define MAD_MAX 256
#define MAX_PENDING 512
#define LATE_RING 256
#define SLICE_MS 20
#define GATE_MS 5000

#define SMP_LID_CLASS 0x01
#define SMP_DR_CLASS 0x81

#define SIM_MAGIC 0xdeadbeefU
#define SIM_CTL_ERROR 0
#define SIM_CTL_CONNECT 1
#define SIM_CTL_DISCONNECT 2
#define MAX_ATTACHED 8

/* struct ib_user_mad (ABI 5): agent_id, status, timeout_ms, retries, length, ib_mad_addr. */
struct umad_hdr {
	uint32_t agent_id;
	uint32_t status;
	uint32_t timeout_ms;
	uint32_t retries;
	uint32_t length;
	uint8_t addr[44];
};
_Static_assert(sizeof(struct umad_hdr) == 64, "struct ib_user_mad is 64 bytes");

/* ibsim's control message (struct sim_ctl): magic, client id, type, length, 64 data bytes. */
struct sim_ctl_msg {
	uint32_t magic;
	uint32_t clientid;
	uint32_t type;
	uint32_t len;
	char data[64];
};

/* struct ib_user_mad_reg_req, and the ioctl that registers an agent with it. */
struct reg_req {
	uint32_t id;
	uint32_t method_mask[4];
	uint8_t qpn;
	uint8_t mgmt_class;
	uint8_t mgmt_class_version;
	uint8_t oui[3];
	uint8_t rmpp_version;
};
#define REGISTER_AGENT _IOWR(0x1b, 1, struct reg_req)

enum { FREE, IN_FLIGHT, TIMED_OUT };

struct pending {
	int state;
	int fd;
	unsigned long gen; /* which send this entry holds (a slot is reused once FREE) */
	uint8_t mclass;
	uint32_t tid;
	uint32_t retries_left;
	uint32_t timeout_ms;
	uint64_t deadline_ms;
	size_t len;
	unsigned char buf[sizeof(struct umad_hdr) + MAD_MAX];
};

struct late {
	uint8_t mclass;
	uint32_t tid;
};

static int (*next_open)(const char *, int, ...);
static int (*next_close)(int);
static ssize_t (*next_read)(int, void *, size_t);
static ssize_t (*next_write)(int, const void *, size_t);
static int (*next_poll)(struct pollfd *, nfds_t, int);
static DIR *(*next_opendir)(const char *);
static int (*next_scandir)(const char *, struct dirent ***, int (*)(const struct dirent *),
			   int (*)(const struct dirent **, const struct dirent **));
static int (*next_pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
				  void *);
static int (*next_mutex_lock)(pthread_mutex_t *);
static int (*next_mutex_unlock)(pthread_mutex_t *);
static pthread_once_t once = PTHREAD_ONCE_INIT;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct pending pending[MAX_PENDING];
static struct late late[LATE_RING];
static unsigned late_next;
static unsigned long sends; /* generations of tracked sends */
static unsigned char is_umad[UMAD_FD_END - UMAD_FD_FIRST];
/* Per umad fd: agent ids + 1 of the SMP guards (see guard_smps), 0 for none. */
static uint32_t guard[UMAD_FD_END - UMAD_FD_FIRST][2];

/* The timeout of this thread's last poll on a umad fd: how long a read that dropped the MAD
 * poll announced waits for the next one. */
static __thread int last_poll_timeout;

/* This process's attachments to ibsim (ctl socket, client id), for the signal handler. */
static struct {
	int fd;
	uint32_t clientid;
} attached[MAX_ATTACHED];
static volatile sig_atomic_t n_attached;
static pid_t attached_pid;

/* The last control request this thread wrote (umad2sim writes it, then reads the reply). */
static __thread struct {
	int fd;
	struct sim_ctl_msg msg;
} last_ctl = { .fd = -1 };

static void resolve(void)
{
	next_open = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
	next_close = (int (*)(int))dlsym(RTLD_NEXT, "close");
	next_read = (ssize_t(*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
	next_write = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
	next_poll = (int (*)(struct pollfd *, nfds_t, int))dlsym(RTLD_NEXT, "poll");
	next_opendir = (DIR * (*)(const char *)) dlsym(RTLD_NEXT, "opendir");
	next_scandir = (int (*)(const char *, struct dirent ***, int (*)(const struct dirent *),
				int (*)(const struct dirent **, const struct dirent **)))
		dlsym(RTLD_NEXT, "scandir");
	next_pthread_create = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
				       void *))dlsym(RTLD_NEXT, "pthread_create");
	next_mutex_lock = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_lock");
	next_mutex_unlock = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_unlock");
}

static void init(void)
{
	pthread_once(&once, resolve);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static long env_seconds(const char *name, long fallback)
{
	const char *value = getenv(name);
	char *end;
	long n;

	if (!value || !*value)
		return fallback;
	n = strtol(value, &end, 10);
	return (*end || n < 0) ? fallback : n;
}

static int umad_fd(int fd)
{
	return fd >= UMAD_FD_FIRST && fd < UMAD_FD_END && is_umad[fd - UMAD_FD_FIRST];
}

static uint32_t mad_tid(const unsigned char *mad)
{
	/* TID: bytes 8..15, big-endian; the low 32 bits are the last four. */
	return (uint32_t)mad[12] << 24 | (uint32_t)mad[13] << 16 | (uint32_t)mad[14] << 8 | mad[15];
}

static int mad_is_response(const unsigned char *mad)
{
	return mad[3] & 0x80;
}

/* Remember a request about to be written with a timeout (the caller holds the lock). It is
 * recorded before umad2sim sends it: another thread may read the reply before write()
 * returns, and a reply that finds no request is not counted, so the answered send would be
 * resent at its deadline (a subnet manager's Set applied twice, the second time late). The
 * deadline is set once the write returned (armed); until then nothing resends it. Returns the
 * slot, or -1 when the send is left untimed. */
static int track(int fd, const void *buf, size_t count, unsigned long *gen)
{
	const struct umad_hdr *hdr = buf;
	const unsigned char *mad = (const unsigned char *)buf + sizeof(*hdr);
	int i;

	if (count < sizeof(*hdr) + MAD_HDR_LEN || !hdr->timeout_ms || mad_is_response(mad))
		return -1;
	for (i = 0; i < MAX_PENDING; i++) {
		struct pending *p = &pending[i];

		if (p->state != FREE)
			continue;
		p->state = IN_FLIGHT;
		p->fd = fd;
		p->gen = *gen = ++sends;
		p->mclass = mad[1];
		p->tid = mad_tid(mad);
		p->retries_left = hdr->retries;
		p->timeout_ms = hdr->timeout_ms;
		p->deadline_ms = UINT64_MAX;
		p->len = count < sizeof(p->buf) ? count : sizeof(p->buf);
		memcpy(p->buf, buf, p->len);
		return i;
	}
	/* table full: this send is left untimed, as umad2sim alone would leave it */
	return -1;
}

/* The write of a tracked send returned: start its timeout, or forget it when it was not sent.
 * A reply may already have settled it (the slot is FREE, or holds a later send). */
static void arm(int slot, unsigned long gen, int sent)
{
	struct pending *p;

	if (slot < 0)
		return;
	p = &pending[slot];
	if (p->gen != gen || p->state != IN_FLIGHT)
		return;
	if (sent)
		p->deadline_ms = now_ms() + p->timeout_ms;
	else
		p->state = FREE;
}

/* A reply arrived: forget its request. Returns 1 when the reply is late (drop it). */
static int settle(const unsigned char *mad)
{
	uint32_t tid = mad_tid(mad);
	int i;

	for (i = 0; i < MAX_PENDING; i++) {
		struct pending *p = &pending[i];

		if (p->state == IN_FLIGHT && p->mclass == mad[1] && p->tid == tid) {
			p->state = FREE;
			return 0;
		}
	}
	for (i = 0; i < LATE_RING; i++)
		if (late[i].tid == tid && late[i].mclass == mad[1] && tid)
			return 1;
	return 0;
}

/* Resend or time out what is due on fd. Resends are copied to `out` and written by the caller
 * after the lock is released (umad2sim takes its own locks in write). Returns the count. */
static int due(int fd, struct pending *out, int max_out, uint64_t *next_deadline)
{
	uint64_t now = now_ms();
	int i, n = 0;

	for (i = 0; i < MAX_PENDING; i++) {
		struct pending *p = &pending[i];

		if (p->state != IN_FLIGHT || p->fd != fd)
			continue;
		if (p->deadline_ms <= now) {
			if (p->retries_left && n < max_out) {
				p->retries_left--;
				p->deadline_ms = now + p->timeout_ms;
				out[n++] = *p;
			} else if (!p->retries_left) {
				p->state = TIMED_OUT;
				late[late_next % LATE_RING].mclass = p->mclass;
				late[late_next % LATE_RING].tid = p->tid;
				late_next++;
				continue;
			}
		}
		if (p->deadline_ms < *next_deadline)
			*next_deadline = p->deadline_ms;
	}
	return n;
}

/* Service fd: resend what is due; return 1 when a timed-out send waits to be read. */
static int service(int fd, uint64_t *next_deadline)
{
	struct pending resend[8];
	int i, n, ready = 0;

	pthread_mutex_lock(&lock);
	n = due(fd, resend, 8, next_deadline);
	for (i = 0; i < MAX_PENDING; i++)
		if (pending[i].state == TIMED_OUT && pending[i].fd == fd)
			ready = 1;
	pthread_mutex_unlock(&lock);
	for (i = 0; i < n; i++)
		next_write(fd, resend[i].buf, resend[i].len);
	return ready;
}

/* Hand a timed-out send to the reader as ib_umad does; 0 when there is none. */
static ssize_t take_timed_out(int fd, void *buf, size_t count)
{
	struct pending *found = NULL;
	size_t size = sizeof(struct umad_hdr) + MAD_HDR_LEN;
	struct umad_hdr *hdr;
	unsigned char *mad;
	int i;

	pthread_mutex_lock(&lock);
	for (i = 0; i < MAX_PENDING; i++)
		if (pending[i].state == TIMED_OUT && pending[i].fd == fd &&
		    (!found || pending[i].deadline_ms < found->deadline_ms))
			found = &pending[i];
	if (!found) {
		pthread_mutex_unlock(&lock);
		return 0;
	}
	hdr = (struct umad_hdr *)found->buf;
	mad = found->buf + sizeof(*hdr);
	hdr->status = ETIMEDOUT;
	hdr->length = size;
	/* umad2sim puts the agent id into TID bits 32..47 of what it sends, as the kernel puts
	 * the agent's hi_tid into the upper half: the send handed back carries it too. */
	mad[10] = (hdr->agent_id >> 8) & 0xff;
	mad[11] = hdr->agent_id & 0xff;
	if (size > count)
		size = count;
	memcpy(buf, found->buf, size);
	found->state = FREE;
	pthread_mutex_unlock(&lock);
	return (ssize_t)size;
}

static void forget_fd(int fd)
{
	int i;

	pthread_mutex_lock(&lock);
	for (i = 0; i < MAX_PENDING; i++)
		if (pending[i].state != FREE && pending[i].fd == fd)
			pending[i].state = FREE;
	is_umad[fd - UMAD_FD_FIRST] = 0;
	guard[fd - UMAD_FD_FIRST][0] = guard[fd - UMAD_FD_FIRST][1] = 0;
	pthread_mutex_unlock(&lock);
}

/* ibsim hands SMPs for a port (SMInfo from the MASTER) to its SM-class client. A client that
 * asked to be one (SIM_SET_ISSM, as the ping checks' `ibping -S` servers) but registered no
 * SMP agent made umad2sim's receiver thread dereference a NULL queue (segfault at 0x40 in
 * libc). Agents registered here for both SMP classes take those MADs; read() drops them, as
 * the kernel delivers no MAD to a process that registered no agent for its class. */
static int guarded_once;

static void guard_smps(int fd)
{
	static const uint8_t classes[2] = { SMP_LID_CLASS, SMP_DR_CLASS };
	const char *issm = getenv("SIM_SET_ISSM");
	int i;

	if (!issm || !*issm || guarded_once)
		return;
	guarded_once = 1;
	for (i = 0; i < 2; i++) {
		struct reg_req req;

		memset(&req, 0, sizeof(req));
		req.mgmt_class = classes[i];
		req.mgmt_class_version = 1;
		if (ioctl(fd, REGISTER_AGENT, &req) == 0)
			guard[fd - UMAD_FD_FIRST][i] = req.id + 1;
	}
}

/* Whether an incoming request reached one of fd's SMP guards (the caller holds the lock). */
static int guarded(int fd, const struct umad_hdr *hdr)
{
	const uint32_t *g = guard[fd - UMAD_FD_FIRST];

	return (g[0] && hdr->agent_id == g[0] - 1) || (g[1] && hdr->agent_id == g[1] - 1);
}

/* The gate umad2sim's receiver thread waits at while guard_early attaches and registers the
 * SMP guard (closed only there). */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int gate_closed;

struct gated_start {
	void *(*fn)(void *);
	void *arg;
};

static void set_gate(int closed)
{
	pthread_mutex_lock(&gate_lock);
	gate_closed = closed;
	pthread_cond_broadcast(&gate_cond);
	pthread_mutex_unlock(&gate_lock);
}

static void *gated(void *p)
{
	struct gated_start start = *(struct gated_start *)p;
	struct timespec until;

	free(p);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += GATE_MS / 1000;
	pthread_mutex_lock(&gate_lock);
	while (gate_closed)
		if (pthread_cond_timedwait(&gate_cond, &gate_lock, &until) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&gate_lock);
	return start.fn(start.arg);
}

/* A mutex inside a missing structure (see 5. above): refused, never dereferenced. */
#define NULL_PAGE 4096

int pthread_mutex_lock(pthread_mutex_t *mutex)
{
	if ((uintptr_t)mutex < NULL_PAGE)
		return EINVAL;
	init();
	return next_mutex_lock(mutex);
}

int pthread_mutex_unlock(pthread_mutex_t *mutex)
{
	if ((uintptr_t)mutex < NULL_PAGE)
		return EINVAL;
	init();
	return next_mutex_unlock(mutex);
}

/* A thread umad2sim starts while the gate is closed (its receiver) waits at the gate first. */
int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	struct gated_start *start;
	Dl_info caller;
	int closed;

	init();
	pthread_mutex_lock(&gate_lock);
	closed = gate_closed;
	pthread_mutex_unlock(&gate_lock);
	if (!closed || !dladdr(__builtin_return_address(0), &caller) || !caller.dli_fname ||
	    !strstr(caller.dli_fname, "umad2sim"))
		return next_pthread_create(thread, attr, fn, arg);
	start = malloc(sizeof(*start));
	if (!start)
		return next_pthread_create(thread, attr, fn, arg);
	start->fn = fn;
	start->arg = arg;
	if (next_pthread_create(thread, attr, gated, start)) {
		free(start);
		return next_pthread_create(thread, attr, fn, arg);
	}
	return 0;
}

/* umad2sim attaches to ibsim, as the SM-class client SIM_SET_ISSM asks for, at the process's
 * first look at the simulated sysfs or /dev/infiniband, and the MASTER's SMInfo (on the trap
 * the new IsSM bit raises) can arrive before the tool opens its umad device. So for such a
 * process that first look opens umad0 here, guard in place, before anything else: the window
 * shrinks from the tool's sysfs scan to one call. The fd stays open for the process's life. */
static void guard_early(const char *path)
{
	static int done;
	const char *issm = getenv("SIM_SET_ISSM");

	if (done || !issm || !*issm || !path ||
	    (strncmp(path, "/sys/class/infiniband", 21) && strncmp(path, "/dev/infiniband", 15)))
		return;
	done = 1;
	set_gate(1);
	open("/dev/infiniband/umad0", O_RDWR | O_NONBLOCK);
	set_gate(0);
}

DIR *opendir(const char *path)
{
	init();
	guard_early(path);
	return next_opendir(path);
}

int scandir(const char *path, struct dirent ***namelist, int (*filter)(const struct dirent *),
	    int (*compar)(const struct dirent **, const struct dirent **))
{
	init();
	guard_early(path);
	return next_scandir(path, namelist, filter, compar);
}

int open(const char *path, int flags, ...)
{
	mode_t mode = 0;
	va_list args;
	int fd;

	init();
	if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) {
		va_start(args, flags);
		mode = va_arg(args, mode_t);
		va_end(args);
	}
	guard_early(path);
	fd = next_open(path, flags, mode);
	if (fd >= UMAD_FD_FIRST && fd < UMAD_FD_END && !strncmp(path, "/dev/infiniband/umad", 20)) {
		pthread_mutex_lock(&lock);
		is_umad[fd - UMAD_FD_FIRST] = 1;
		guard[fd - UMAD_FD_FIRST][0] = guard[fd - UMAD_FD_FIRST][1] = 0;
		pthread_mutex_unlock(&lock);
		guard_smps(fd);
	}
	return fd;
}

int close(int fd)
{
	init();
	if (umad_fd(fd))
		forget_fd(fd);
	return next_close(fd);
}

/* SIGTERM, SIGINT or SIGHUP at its default action: detach from ibsim, then die of it. */
static void detach_on_signal(int sig)
{
	int i, saved = errno;

	if (getpid() == attached_pid) /* not a forked child's: the slots are its parent's */
		for (i = 0; i < n_attached; i++) {
			struct sim_ctl_msg msg;

			memset(&msg, 0, sizeof(msg));
			msg.magic = SIM_MAGIC;
			msg.clientid = attached[i].clientid;
			msg.type = SIM_CTL_DISCONNECT;
			send(attached[i].fd, &msg, sizeof(msg), MSG_DONTWAIT | MSG_NOSIGNAL);
		}
	signal(sig, SIG_DFL);
	raise(sig); /* delivered once the handler returns: the default action, as before */
	errno = saved;
}

static void install_detach(void)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP };
	unsigned i;

	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		struct sigaction old, act;

		if (sigaction(sigs[i], NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO) ||
		    old.sa_handler != SIG_DFL)
			continue; /* the program handles it (OpenSM exits cleanly and detaches) */
		memset(&act, 0, sizeof(act));
		act.sa_handler = detach_on_signal;
		sigemptyset(&act.sa_mask);
		sigaction(sigs[i], &act, NULL);
	}
}

/* ibsim accepted a CONNECT on fd: remember the client id (first word of the reply data). */
static void remember_attached(int fd, const struct sim_ctl_msg *reply)
{
	uint32_t id;

	memcpy(&id, reply->data, sizeof(id));
	pthread_mutex_lock(&lock);
	if (n_attached < MAX_ATTACHED) {
		attached[n_attached].fd = fd;
		attached[n_attached].clientid = id;
		attached_pid = getpid();
		n_attached++;
	}
	pthread_mutex_unlock(&lock);
	install_detach();
}

/* umad2sim detaches a client itself (its exit handler, a closed device): forget it, so a
 * signal never detaches a slot ibsim may have given to another client since. */
static void forget_attached(int fd, uint32_t clientid)
{
	int i;

	pthread_mutex_lock(&lock);
	for (i = 0; i < n_attached; i++)
		if (attached[i].fd == fd && attached[i].clientid == clientid) {
			attached[i] = attached[n_attached - 1];
			n_attached--;
			break;
		}
	pthread_mutex_unlock(&lock);
}

ssize_t write(int fd, const void *buf, size_t count)
{
	ssize_t n;

	init();
	if (umad_fd(fd)) {
		unsigned long gen = 0;
		int slot, saved;

		pthread_mutex_lock(&lock);
		slot = track(fd, buf, count, &gen);
		pthread_mutex_unlock(&lock);
		n = next_write(fd, buf, count);
		saved = errno;
		pthread_mutex_lock(&lock);
		arm(slot, gen, n == (ssize_t)count);
		pthread_mutex_unlock(&lock);
		errno = saved;
		return n;
	}
	if (count == sizeof(struct sim_ctl_msg) && fd >= 0 && fd < UMAD_FD_FIRST &&
	    ((const struct sim_ctl_msg *)buf)->magic == SIM_MAGIC) {
		last_ctl.fd = fd;
		memcpy(&last_ctl.msg, buf, sizeof(last_ctl.msg));
		if (last_ctl.msg.type == SIM_CTL_DISCONNECT)
			forget_attached(fd, last_ctl.msg.clientid);
	}
	return next_write(fd, buf, count);
}

/* Read ibsim's reply to the control request last written on fd: bounded, and asked again
 * when ibsim refused it. A refused CONNECT (every slot taken) is asked again until a slot is
 * free. A request that met no ibsim at all (ECONNREFUSED: the ICMP port unreachable of a
 * datagram nobody received, so nothing was allocated) is asked again likewise: umad2sim would
 * print "ctl failed(read)" and exit, as an 11-fork hand-off saw while ibsim's port was not
 * bound. A request that is only unanswered is not sent again: a late reply to the first copy
 * would then be read as the reply to the next request (and a CONNECT's would hold a slot). */
static ssize_t read_ctl(int fd, void *buf, size_t count)
{
	uint64_t start = now_ms();
	uint64_t ctl_wait = (uint64_t)env_seconds("RAILYARD_SIM_CTL_TIMEOUT", 10) * 1000;
	uint64_t connect_wait = (uint64_t)env_seconds("RAILYARD_SIM_CONNECT_WAIT", 60) * 1000;
	int connect = last_ctl.msg.type == SIM_CTL_CONNECT;
	unsigned backoff_ms = 100;
	uint64_t asked = start;

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		uint64_t now = now_ms(), left;
		struct timespec ts;
		ssize_t n;
		int r, refused;

		if (now - asked >= ctl_wait) {
			errno = ETIMEDOUT;
			return -1;
		}
		left = ctl_wait - (now - asked);
		ts.tv_sec = (time_t)(left / 1000);
		ts.tv_nsec = (long)(left % 1000) * 1000000;
		/* ppoll, not poll: umad2sim's poll takes its device lock, which its exit handler
		 * holds while it disconnects from ibsim through here */
		r = ppoll(&pfd, 1, &ts, NULL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			continue;
		n = next_read(fd, buf, count);
		refused = n < 0 && errno == ECONNREFUSED;
		if (!refused && (n != (ssize_t)sizeof(struct sim_ctl_msg) || !connect ||
				 ((struct sim_ctl_msg *)buf)->type != SIM_CTL_ERROR)) {
			if (connect && n == (ssize_t)sizeof(struct sim_ctl_msg) &&
			    ((struct sim_ctl_msg *)buf)->type == SIM_CTL_CONNECT)
				remember_attached(fd, buf);
			return n;
		}
		if (now_ms() - start >= (connect ? connect_wait : ctl_wait)) {
			if (refused)
				errno = ECONNREFUSED;
			return n;
		}
		/* every slot taken, or no ibsim listening yet: ask again after a while */
		usleep(backoff_ms * 1000);
		if (backoff_ms < 1000)
			backoff_ms *= 2;
		/* a write may report the previous datagram's refusal instead of sending: send again */
		if (next_write(fd, &last_ctl.msg, sizeof(last_ctl.msg)) != sizeof(last_ctl.msg) &&
		    (errno != ECONNREFUSED ||
		     next_write(fd, &last_ctl.msg, sizeof(last_ctl.msg)) != sizeof(last_ctl.msg)))
			return n;
		asked = now_ms();
	}
}

static int shim_poll(struct pollfd *fds, nfds_t nfds, int timeout);

/* Read a umad fd: a timed-out send first, then what umad2sim queued, minus what the kernel
 * would never have delivered (late replies, SMPs for a guard). After dropping one, wait for
 * the next as the caller's last poll would have (a reader told "readable" must not get
 * EWOULDBLOCK: ibping's server loop ends on it). */
static ssize_t read_umad(int fd, void *buf, size_t count)
{
	for (;;) {
		const struct umad_hdr *hdr = buf;
		const unsigned char *mad = (const unsigned char *)buf + sizeof(*hdr);
		uint64_t next_deadline = UINT64_MAX;
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;
		int drop;

		service(fd, &next_deadline);
		n = take_timed_out(fd, buf, count);
		if (n)
			return n;
		n = next_read(fd, buf, count);
		if (n < (ssize_t)(sizeof(*hdr) + MAD_HDR_LEN))
			return n;
		pthread_mutex_lock(&lock);
		if (!mad_is_response(mad) && !hdr->status)
			drop = guarded(fd, hdr); /* an incoming request */
		else
			drop = settle(mad);
		pthread_mutex_unlock(&lock);
		if (!drop)
			return n;
		if (shim_poll(&pfd, 1, last_poll_timeout) <= 0) {
			errno = EWOULDBLOCK;
			return -EWOULDBLOCK;
		}
	}
}

ssize_t read(int fd, void *buf, size_t count)
{
	init();
	if (umad_fd(fd))
		return read_umad(fd, buf, count);
	if (fd == last_ctl.fd && count == sizeof(struct sim_ctl_msg)) {
		last_ctl.fd = -1;
		return read_ctl(fd, buf, count);
	}
	return next_read(fd, buf, count);
}

static int shim_poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	uint64_t end;
	nfds_t i;
	int fd = -1;

	init();
	for (i = 0; i < nfds; i++)
		if (umad_fd(fds[i].fd)) {
			fd = fds[i].fd;
			break;
		}
	if (fd < 0)
		return next_poll(fds, nfds, timeout);
	last_poll_timeout = timeout;
	end = timeout < 0 ? UINT64_MAX : now_ms() + (uint64_t)timeout;
	for (;;) {
		uint64_t next_deadline = UINT64_MAX, now, slice = SLICE_MS;
		int r;

		if (service(fd, &next_deadline)) {
			fds[i].revents = POLLIN;
			return 1;
		}
		now = now_ms();
		if (now >= end)
			return 0;
		if (next_deadline != UINT64_MAX)
			slice = next_deadline > now ? next_deadline - now : 0;
		if (slice > SLICE_MS)
			slice = SLICE_MS;
		if (end != UINT64_MAX && end - now < slice)
			slice = end - now;
		r = next_poll(fds, nfds, (int)slice);
		if (r > 0)
			return r;
	}
}

int poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	init();
	return shim_poll(fds, nfds, timeout);
}
