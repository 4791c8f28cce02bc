/*
 * The gate: before a launch, the BE side waits for the admission rule (../board.c) and a timed
 * launch records a start event; after it, an end event; a tracker thread polls the end events
 * and, as each launch completes, updates the kernel's profile and the board's books (the HP
 * side's outstanding work and slowdown, the BE side's outstanding budget).
 */
#define _GNU_SOURCE
#include "shim.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define TICKETS 4096
/* A BE kernel shape's launches are timed (a start event as well as the end event) until it has
 * this many timed runs: enough for its fastest time, the charge the rule uses. After that only
 * its completion matters, and under MPS every event record is one more command a launch pays
 * for. HP launches are sampled instead (below): their times are the supervisor's signal. */
#define BE_TIMED_RUNS 16
/* An HP kernel shape's first HP_TIMED_LAUNCHES launches are timed, then one in HP_TIME_EVERY:
 * the supervisor's slowdown signal is a ratio of sums, which a sample keeps, and every event a
 * launch records is a command on the HP stream and driver time on the HP thread. Beside a
 * training step the runtime held the BE side to 3% and still ran a CNN's 3-8 us kernels 1.66x
 * slower at p50 (H100, 2026-12-06): the shim's own cost, two timed events a launch. An untimed
 * launch records one end event created without timing, the cheapest kind to record and query. */
#define HP_TIMED_LAUNCHES 16
#define HP_TIME_EVERY 8

struct sch_ticket {
	sch_profile *p;
	CUstream stream;
	CUevent start, end;
	int end_untimed; /* end came from the pool of events without timing */
	int verdict;
	int64_t charge;
	int sms, bound;
	int64_t shim_ns; /* the launch's time in sch_before, less any wait for the rule */
	/* For a timed launch: when its start event was recorded (host clock), the host time from
	 * then to the launch call's return (host_gap_ns), and whether a poll saw earlier work on
	 * its stream still running after that record (queued_behind): see slowdown_sample. */
	int64_t recorded_at, host_gap_ns;
	int queued_behind;
	sch_ticket *next_free;
};

static int role = ROLE_OFF;
/* SCHOONER_COLOCATE_HP_BASELINE=events: an HP kernel's slowdown is its event-timed run over
 * the fastest event-timed run of its shape, not over the profile's fastest (which a profile
 * file may have given from Nsight Compute: the kernel alone, without what the start and end
 * events add, so a few-microsecond kernel reads as slowed down when it is not, and the
 * supervisor holds the BE side back for nothing). The default, `profile`, keeps the seed. */
static int hp_baseline_events;
/* SCHOONER_COLOCATE_IDLE_SAMPLES=from-launch: a timed HP launch that found its stream idle (with
 * a host gap too long to ignore) counts in the slowdown signal from its launch call's return
 * (from_launch). The default, `leave-out`, leaves it out of the signal. On an H100 from-launch
 * read 1.09x with the HP side not slowed (most likely the GPU waking after an idle spell is in
 * that time) and held the BE side to 8-30%, so it stays opt-in (BENCHMARKS.md, colocation,
 * 2026-12-07). */
static int idle_samples_leave_out = 1;
static sch_board *board;
static int sm_count;
static int64_t poll_ns = 5000;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_once_t device_once = PTHREAD_ONCE_INIT;
static const char *profiles_out, *stats_out;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER; /* tickets, pending, events */
/* Held by the one poll at a time through its event queries, and by a capture's begin: the
 * queries run without mu, so a launch never waits for the driver's answers to them. Taken
 * before mu, never after it. */
static pthread_mutex_t qmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t have_pending = PTHREAD_COND_INITIALIZER;
/* Whether the tracker is blocked on have_pending (under mu): only then does a launch signal it. */
static int tracker_waiting;
static sch_ticket tickets[TICKETS];
static sch_ticket *free_tickets;
static sch_ticket *pending[TICKETS]; /* in launch order */
static int npending;
/* A poll asks about at most this many streams that are still busy before it stops asking;
 * past it, every ticket is queried (correct, only slower). */
#define BUSY_STREAMS 32
static CUevent event_pool[2 * TICKETS];
static int nevents;
static CUevent untimed_pool[TICKETS]; /* created with CU_EVENT_DISABLE_TIMING */
static int nuntimed;
static CUcontext ctx;

/* Under the default (global) capture mode an event query from any thread invalidates a CUDA
 * graph capture in progress, so the shim polls nothing while a capture is open (the capture
 * calls are hooked: captures_open) and does not track launches into one (the graph's launch is
 * tracked). A launch seen capturing through a call the shim did not see begin (another capture
 * API) also quiets polling for a second (capture_quiet_until). */
static int64_t capture_quiet_until;
static int64_t captures_open; /* graph captures begun and not yet ended */

/* Under qmu: a poll holds it from its look at captures_open through its last query, so a poll
 * that looked before the capture opened ends before the capture begins, and every later one
 * sees it open. Counted without the lock, a query could fall between the look and the begin
 * and invalidate the capture (seen once in CI, under load). */
void sch_capture_begin(void)
{
	pthread_mutex_lock(&qmu);
	__atomic_fetch_add(&captures_open, 1, __ATOMIC_ACQ_REL);
	pthread_mutex_unlock(&qmu);
}

void sch_capture_end(void)
{
	if (__atomic_sub_fetch(&captures_open, 1, __ATOMIC_ACQ_REL) < 0)
		__atomic_store_n(&captures_open, 0, __ATOMIC_RELEASE);
}

static struct {
	int64_t seen[SRC_COUNT];
	int64_t via_proc_address, via_dlsym;
	int64_t untracked, failed_events, captured, untimed;
	int64_t waits, wait_ns;
	int64_t event_queries, max_poll_queries;
	/* The least a timed launch of a shape whose fastest time came from a profile file took
	 * beyond that time (negative: faster). With times from Nsight Compute (the kernel alone),
	 * what the start and end events add to a kernel's own time at the least. */
	int64_t min_excess_ns;
	int excess_seen;
	/* What the shim itself costs a tracked launch on the launching thread (before and after
	 * the real launch call, less waits for the rule): a launch-bound program pays it at every
	 * kernel. */
	int64_t shim_ns, shim_launches;
	/* Timed HP launches not seen queued behind earlier work, with a host gap over
	 * 1/IDLE_GAP_SHARE of their time: left out of the signal (or counted from their launch's
	 * return, with SCHOONER_COLOCATE_IDLE_SAMPLES=from-launch; see slowdown_sample). */
	int64_t gapped;
	/* Launches that woke the blocked tracker (see TRACKER_IDLE_NS). */
	int64_t wakeups;
} stats;

/* A timed HP launch not seen queued behind earlier work counts towards the slowdown signal
 * only when the host gap it may hold is under 1/IDLE_GAP_SHARE of its time. */
#define IDLE_GAP_SHARE 20

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* A setting of two values from the environment: 1 when name is set to alt; 0 when it is unset,
 * empty or def, and for anything else, which is said on stderr (the program runs on). */
static int env_choice(const char *name, const char *def, const char *alt)
{
	const char *v = getenv(name);
	if (v && strcmp(v, alt) == 0)
		return 1;
	if (v && *v && strcmp(v, def) != 0)
		fprintf(stderr, "schooner-colocate: %s=%s is not %s or %s: using %s\n", name, v, def, alt, def);
	return 0;
}

static void init(void)
{
	const char *r = getenv("SCHOONER_COLOCATE_ROLE");
	const char *path = getenv("SCHOONER_COLOCATE_BOARD");
	if (!r || !path)
		return;
	int want = strcmp(r, "hp") == 0 ? ROLE_HP : strcmp(r, "be") == 0 ? ROLE_BE : ROLE_OFF;
	if (want == ROLE_OFF) {
		fprintf(stderr, "schooner-colocate: SCHOONER_COLOCATE_ROLE=%s is not hp or be: launches pass ungated\n", r);
		return;
	}
	int fd = open(path, O_RDWR);
	if (fd < 0) {
		fprintf(stderr, "schooner-colocate: board %s: %s: launches pass ungated\n", path, strerror(errno));
		return;
	}
	void *m = mmap(NULL, sizeof(sch_board), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED || !sch_board_valid((sch_board *)m)) {
		fprintf(stderr, "schooner-colocate: %s holds no board of version %d: launches pass ungated\n", path,
			SCH_BOARD_VERSION);
		return;
	}
	board = m;
	sm_count = (int)board->sm_count;
	const char *p = getenv("SCHOONER_COLOCATE_POLL_US");
	if (p && atoi(p) > 0)
		poll_ns = (int64_t)atoi(p) * 1000;
	hp_baseline_events = env_choice("SCHOONER_COLOCATE_HP_BASELINE", "profile", "events");
	idle_samples_leave_out = !env_choice("SCHOONER_COLOCATE_IDLE_SAMPLES", "leave-out", "from-launch");
	const char *in = getenv("SCHOONER_COLOCATE_PROFILES");
	if (in && *in)
		sch_profiles_load(in);
	profiles_out = getenv("SCHOONER_COLOCATE_PROFILE_OUT");
	stats_out = getenv("SCHOONER_COLOCATE_STATS");
	for (int i = 0; i < TICKETS; i++) {
		tickets[i].next_free = free_tickets;
		free_tickets = &tickets[i];
	}
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0); /* sleeps of a few µs, not 50 */
	role = want;
}

int sch_role(void)
{
	pthread_once(&once, init);
	return role;
}

void sch_count_lookup(int via_proc_address)
{
	if (via_proc_address)
		__atomic_fetch_add(&stats.via_proc_address, 1, __ATOMIC_RELAXED);
	else
		__atomic_fetch_add(&stats.via_dlsym, 1, __ATOMIC_RELAXED);
}

/* The device's SM count, once a context exists (the first launch): never a constant. */
static void read_device(void)
{
	CUdevice dev;
	int n = 0;
	if (drv_cuCtxGetDevice && drv_cuDeviceGetAttribute && drv_cuCtxGetDevice(&dev) == CUDA_SUCCESS &&
	    drv_cuDeviceGetAttribute(&n, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev) == CUDA_SUCCESS && n > 0) {
		sm_count = n;
		/* The supervisor may not know the device: the first side to see it tells it. */
		uint32_t unknown = 0;
		__atomic_compare_exchange_n(&board->sm_count, &unknown, (uint32_t)n, 0, __ATOMIC_ACQ_REL,
					    __ATOMIC_ACQUIRE);
	}
	if (drv_cuCtxGetCurrent)
		drv_cuCtxGetCurrent(&ctx);
}

static void *tracker(void *arg);

/* At the first launch, once a context exists: the device, and the tracker thread (which also
 * writes the statistics of a BE side that waits from its first launch on). */
static void start(void)
{
	read_device();
	pthread_t th;
	if (pthread_create(&th, NULL, tracker, NULL) == 0)
		pthread_detach(th);
}

/* Events come from two pools, timed and untimed (CU_EVENT_DISABLE_TIMING: no timestamp, so
 * cheaper to record and query); call with mu held. */
static CUevent take_event(int untimed)
{
	if (untimed && nuntimed > 0)
		return untimed_pool[--nuntimed];
	if (!untimed && nevents > 0)
		return event_pool[--nevents];
	CUevent e = NULL;
	if (drv_cuEventCreate(&e, untimed ? CU_EVENT_DISABLE_TIMING : CU_EVENT_DEFAULT) != CUDA_SUCCESS)
		return NULL;
	return e;
}

static void give_event(CUevent e, int untimed)
{
	if (!e)
		return;
	if (untimed && nuntimed < TICKETS)
		untimed_pool[nuntimed++] = e;
	else if (!untimed && nevents < 2 * TICKETS)
		event_pool[nevents++] = e;
}

/* Takes a launch off the board's books (measured and fastest: the HP kernel's times, 0 when
 * unknown) and frees its events and ticket; call with mu held. */
static void retire_locked(sch_ticket *t, int64_t measured, int64_t fastest)
{
	if (role == ROLE_HP)
		sch_hp_completed(board, t->bound, measured, fastest);
	else
		sch_be_completed(board, t->verdict, t->charge, t->sms);
	give_event(t->start, 0);
	give_event(t->end, t->end_untimed);
	t->next_free = free_tickets;
	free_tickets = t;
}

/* Whether an HP launch's event time may stand in the slowdown signal as it is. Its start event
 * is recorded just before the launch; on a stream still running earlier work it fires when
 * that work ends, after the kernel was submitted, so the time is the kernel's. On an idle
 * stream it fires at once, and the kernel starts only once the driver has submitted it: the
 * time then also holds the driver's own launch time, 2-5 us on an H100, as long as a CNN's
 * kernels, so a launch-bound program read 1.2-4x slowed down with nothing beside it and the
 * supervisor held the BE side back for nothing (BENCHMARKS.md, colocation, 2026-12-06). So a
 * sample stands as it is when a poll saw earlier work on its stream still running after its
 * start event was recorded (the poll learns that for free: it skips the launches queued
 * behind a running one), or when the host gap, which bounds the error, is small against it.
 * Asking the driver in the launch path instead would put a query into every timed launch. */
static int slowdown_sample(const sch_ticket *t, int64_t ns)
{
	return role != ROLE_HP || t->queued_behind || t->host_gap_ns * IDLE_GAP_SHARE <= ns;
}

/* The sample of an HP launch that found its stream idle, under SCHOONER_COLOCATE_IDLE_SAMPLES=
 * from-launch: its time from the launch call's return, when the kernel had been submitted, to
 * its end, and at least its shape's fastest time. With nothing beside it that reads no
 * slowdown; behind a BE piece holding the SMs it reads the wait. Such launches are a request's
 * first kernels, the ones that wait for the BE work in progress when a request arrives: left
 * out of the signal (the default), that wait goes unseen, and at a light HP load, where most
 * requests arrive at a GPU the BE side holds, the supervisor grew the budget while the
 * requests ran 1.27x slower at p50 (BENCHMARKS.md, colocation, two HP loads). */
static int64_t from_launch(const sch_ticket *t, int64_t ns, int64_t fastest)
{
	int64_t after = ns - t->host_gap_ns;
	return after > fastest ? after : fastest;
}

/* Takes a completed launch off the books: its time (0: not timed) into its profile, then
 * retire_locked; call with mu held. */
static void complete_locked(sch_ticket *t, int64_t ns)
{
	int64_t fastest = 0;
	if (ns > 0) {
		sch_profile_lock();
		if (t->p->seeded_ns > 0 && (!stats.excess_seen || ns - t->p->seeded_ns < stats.min_excess_ns)) {
			stats.min_excess_ns = ns - t->p->seeded_ns;
			stats.excess_seen = 1;
		}
		if (t->p->fastest_ns == 0 || ns < t->p->fastest_ns)
			t->p->fastest_ns = ns;
		if (t->p->timed_fastest_ns == 0 || ns < t->p->timed_fastest_ns)
			t->p->timed_fastest_ns = ns;
		__atomic_fetch_add(&t->p->runs, 1, __ATOMIC_RELAXED);
		fastest = hp_baseline_events ? t->p->timed_fastest_ns : t->p->fastest_ns;
		sch_profile_unlock();
	}
	if (ns > 0 && !slowdown_sample(t, ns)) {
		stats.gapped++;
		ns = idle_samples_leave_out ? 0 : from_launch(t, ns, fastest);
	}
	retire_locked(t, ns, ns > 0 ? fastest : 0);
}

/* Under qmu: the pending launches one poll looks at, and what it found of each (its time, 0
 * when not timed; -1 still running). */
static sch_ticket *polled[TICKETS];
static int64_t polled_ns[TICKETS];

/* Completes what has completed; call with neither lock held. Nothing is queried while a
 * capture may be open (capture_quiet_until). A stream runs its work in order, so once a launch
 * on a stream is found still running, the launches after it on that stream are not asked
 * about: a poll costs a query per busy stream and per completion, not per launch in flight.
 * The queries run under qmu alone: mu is held only to copy the pending launches and to retire
 * the completed ones, so a launch waits for neither the queries nor the driver. Polls used to
 * hold mu through every query (and before that queried every pending launch): a launch paid
 * 4-8 us of host time in the shim on an H100, more than a CNN's kernels (BENCHMARKS.md,
 * colocation, 2026-12-06). Launches on the legacy or per-thread default stream share one
 * handle; treating them as one stream only delays noticing a completion, never notices one
 * early. */
static void poll_completions(void)
{
	/* Nothing pending (read without the lock: a launch appended meanwhile waits for the next
	 * poll): the idle tracker's polls then take no lock the launch path takes. */
	if (__atomic_load_n(&npending, __ATOMIC_RELAXED) == 0)
		return;
	pthread_mutex_lock(&qmu);
	if (__atomic_load_n(&captures_open, __ATOMIC_ACQUIRE) > 0 ||
	    now_ns() < __atomic_load_n(&capture_quiet_until, __ATOMIC_ACQUIRE)) {
		pthread_mutex_unlock(&qmu);
		return;
	}
	/* Only a poll removes pending launches, and polls hold qmu: pending's first n entries stay
	 * these, in this order, while launches append after them. */
	pthread_mutex_lock(&mu);
	int n = npending;
	memcpy(polled, pending, (size_t)n * sizeof *polled);
	pthread_mutex_unlock(&mu);

	CUstream busy[BUSY_STREAMS];
	int64_t busy_at[BUSY_STREAMS]; /* a time at which the stream's oldest launch still ran */
	int nbusy = 0, done = 0;
	int64_t queries = 0, failed = 0;
	for (int i = 0; i < n; i++) {
		sch_ticket *t = polled[i];
		polled_ns[i] = -1;
		int skip = 0;
		for (int b = 0; b < nbusy && !skip; b++)
			if (busy[b] == t->stream) {
				skip = 1;
				if (t->recorded_at && t->recorded_at <= busy_at[b])
					t->queued_behind = 1;
			}
		if (skip)
			continue;
		queries++;
		int64_t asked = now_ns();
		CUresult r = drv_cuEventQuery(t->end);
		if (r == CUDA_ERROR_NOT_READY) {
			if (nbusy < BUSY_STREAMS) {
				busy_at[nbusy] = asked;
				busy[nbusy++] = t->stream;
			}
			continue;
		}
		float ms = 0;
		polled_ns[i] = 0;
		if (r == CUDA_SUCCESS && t->start &&
		    drv_cuEventElapsedTime(&ms, t->start, t->end) == CUDA_SUCCESS && ms > 0)
			polled_ns[i] = (int64_t)(ms * 1e6);
		else if (r != CUDA_SUCCESS)
			failed++;
		done++;
	}

	pthread_mutex_lock(&mu);
	if (done) {
		int kept = 0;
		for (int i = 0; i < n; i++) {
			if (polled_ns[i] < 0)
				pending[kept++] = polled[i];
			else
				complete_locked(polled[i], polled_ns[i]);
		}
		for (int i = n; i < npending; i++)
			pending[kept++] = pending[i];
		npending = kept;
	}
	stats.failed_events += failed;
	stats.event_queries += queries;
	if (queries > stats.max_poll_queries)
		stats.max_poll_queries = queries;
	pthread_mutex_unlock(&mu);
	pthread_mutex_unlock(&qmu);
}

static void write_files(void);
static void write_stats(void);

/* How long the tracker goes on polling with nothing pending before it blocks until a launch
 * wakes it. Waking it costs the launching thread a system call and then the lock the woken
 * tracker takes: with a fake driver, launches 200 us apart paid 4.5 us each in the shim against
 * 0.7 us for launches back to back, and a request-driven HP program (kernels microseconds
 * apart, requests milliseconds apart) launched onto a sleeping tracker at every request and
 * often within one. Polling through the gaps between requests costs a core's wake-ups every
 * few microseconds for this long after the last launch. */
#define TRACKER_IDLE_NS 50000000LL

/* Polls completions while launches are pending, and for TRACKER_IDLE_NS after; every second,
 * even when idle, it also writes the statistics and profiles: a program stopped by a signal
 * runs no destructor. */
static void *tracker(void *arg)
{
	(void)arg;
	if (ctx && drv_cuCtxSetCurrent)
		drv_cuCtxSetCurrent(ctx);
	struct timespec nap = {0, poll_ns};
	int64_t next_write = now_ns() + 1000000000LL, busy_at = now_ns();
	for (;;) {
		pthread_mutex_lock(&mu);
		if (npending > 0)
			busy_at = now_ns();
		else if (now_ns() - busy_at > TRACKER_IDLE_NS) {
			tracker_waiting = 1;
			while (npending == 0 && now_ns() < next_write) {
				struct timespec until;
				clock_gettime(CLOCK_REALTIME, &until);
				until.tv_sec += 1;
				pthread_cond_timedwait(&have_pending, &mu, &until);
			}
			tracker_waiting = 0;
			if (npending > 0) /* woken by a launch, not by the second's statistics */
				busy_at = now_ns();
		}
		pthread_mutex_unlock(&mu);
		poll_completions();
		if (now_ns() >= next_write) {
			write_files();
			next_write = now_ns() + 1000000000LL;
		}
		nanosleep(&nap, NULL);
	}
	return NULL;
}

/* Spins for one poll interval, yielding: a BE launch waiting for the rule reacts within
 * microseconds, which a sleep (50 µs of timer slack by default) would not. */
static void spin_poll(void)
{
	int64_t until = now_ns() + poll_ns;
	while (now_ns() < until)
		sched_yield();
}

sch_ticket *sch_before(const sch_shape *shape, CUstream stream)
{
	__atomic_fetch_add(&stats.seen[shape->src], 1, __ATOMIC_RELAXED);
	if (sch_role() == ROLE_OFF || !drv_cuEventCreate)
		return NULL;
	int64_t entered = now_ns(), waited = 0;
	int capture = 0;
	if (drv_cuStreamIsCapturing && drv_cuStreamIsCapturing(stream, &capture) == CUDA_SUCCESS && capture != 0) {
		/* Recorded into a graph, not run now: pass it through untouched. */
		__atomic_store_n(&capture_quiet_until, now_ns() + 1000000000LL, __ATOMIC_RELEASE);
		__atomic_fetch_add(&stats.captured, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	pthread_once(&device_once, start);
	sch_profile_lock();
	sch_profile *p = sch_profile_of(shape, sm_count);
	int64_t fastest = p->fastest_ns;
	int sms = p->sms, bound = p->bound;
	sch_profile_unlock();

	int verdict = 0;
	int64_t charge = 0;
	if (role == ROLE_BE) {
		int64_t waited_from = 0;
		int first = 0; /* the verdict that first held this launch */
		for (;;) {
			charge = sch_charge_ns(board, fastest);
			verdict = sch_admit(board, charge, sms, bound);
			if (verdict > 0)
				break;
			if (!waited_from) {
				waited_from = now_ns();
				first = verdict;
			}
			poll_completions();
			spin_poll();
		}
		if (waited_from) {
			int64_t w = now_ns() - waited_from;
			waited = w;
			sch_be_waited(board, w, first);
			stats.waits++;
			stats.wait_ns += w;
		}
	}

	pthread_mutex_lock(&mu);
	/* Every ticket in flight: wait (up to a second) for launches to complete rather than
	 * launch untracked, which for the HP side would hide busy work from the BE side. The
	 * driver's own launch queue is shallower than the tickets, so this is rare. */
	for (int64_t give_up = now_ns() + 1000000000LL; !free_tickets && now_ns() < give_up;) {
		pthread_mutex_unlock(&mu);
		poll_completions();
		pthread_mutex_lock(&mu);
		if (!free_tickets) {
			pthread_mutex_unlock(&mu);
			spin_poll();
			pthread_mutex_lock(&mu);
		}
	}
	sch_ticket *t = free_tickets;
	/* Read after the wait, which may have seen the shape's previous run complete. */
	int timed;
	if (role == ROLE_HP) {
		int64_t n = __atomic_fetch_add(&p->hp_launches, 1, __ATOMIC_RELAXED);
		timed = n < HP_TIMED_LAUNCHES || n % HP_TIME_EVERY == 0;
	} else {
		timed = __atomic_load_n(&p->runs, __ATOMIC_RELAXED) < BE_TIMED_RUNS;
	}
	CUevent start = t && timed ? take_event(0) : NULL;
	CUevent end = t && (start || !timed) ? take_event(!timed) : NULL;
	if (!t || !end) {
		give_event(start, 0);
		pthread_mutex_unlock(&mu);
		stats.untracked++;
		return NULL; /* not tracked: the books never saw it, so they stay balanced */
	}
	free_tickets = t->next_free;
	pthread_mutex_unlock(&mu);
	*t = (sch_ticket){.p = p, .stream = stream, .start = start, .end = end, .end_untimed = !timed, .verdict = verdict,
			  .charge = charge, .sms = sms, .bound = bound};
	if (role == ROLE_HP)
		sch_hp_launched(board, bound);
	else
		sch_be_launched(board, verdict, charge, sms);
	if (t->start)
		drv_cuEventRecord(t->start, stream);
	else
		__atomic_fetch_add(&stats.untimed, 1, __ATOMIC_RELAXED);
	int64_t left = now_ns(); /* one clock read: the start's record time and the shim's cost */
	if (t->start)
		t->recorded_at = left;
	t->shim_ns = left - entered - waited;
	return t;
}

void sch_after(sch_ticket *t, int launched, CUstream stream)
{
	if (!t)
		return;
	int64_t entered = now_ns();
	if (t->start)
		t->host_gap_ns = entered - t->recorded_at;
	if (launched)
		launched = drv_cuEventRecord(t->end, stream) == CUDA_SUCCESS;
	pthread_mutex_lock(&mu);
	int64_t cost = t->shim_ns;
	if (!launched) {
		retire_locked(t, 0, 0); /* the kernel never ran: balance the books at once */
	} else {
		pending[npending++] = t;
		if (tracker_waiting) {
			pthread_cond_signal(&have_pending);
			stats.wakeups++;
		}
	}
	stats.shim_ns += cost + now_ns() - entered;
	stats.shim_launches++;
	pthread_mutex_unlock(&mu);
}

static const char *src_names[SRC_COUNT] = {"runtime", "runtime_ex", "driver", "driver_ex", "graph"};

/* At exit the process's GPU work is done or abandoned: whatever is still pending is taken
 * off the books (the supervisor also resets a side whose process died without this). */
static void drain(void)
{
	poll_completions();
	pthread_mutex_lock(&mu);
	for (int i = 0; i < npending; i++)
		retire_locked(pending[i], 0, 0);
	npending = 0;
	pthread_mutex_unlock(&mu);
}

__attribute__((destructor)) static void finish(void)
{
	if (role == ROLE_OFF)
		return;
	drain();
	write_files();
}

/* Writes the profiles and the statistics, each whole or not at all (temporary file, rename). */
static void write_files(void)
{
	static pthread_mutex_t writing = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_lock(&writing);
	if (profiles_out && *profiles_out)
		sch_profiles_save(profiles_out);
	if (stats_out && *stats_out)
		write_stats();
	pthread_mutex_unlock(&writing);
}

static void write_stats(void)
{
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s.tmp", stats_out);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return;
	fprintf(f, "{\"role\":\"%s\",\"sm_count\":%d,\"launches\":{", role == ROLE_HP ? "hp" : "be", sm_count);
	for (int i = 0; i < SRC_COUNT; i++)
		fprintf(f, "%s\"%s\":%lld", i ? "," : "", src_names[i], (long long)stats.seen[i]);
	fprintf(f, "},\"entry_points_via_cuGetProcAddress\":%lld,\"entry_points_via_dlsym\":%lld,",
		(long long)stats.via_proc_address, (long long)stats.via_dlsym);
	fprintf(f,
		"\"hp_baseline\":\"%s\",\"untracked\":%lld,\"captured\":%lld,\"failed_events\":%lld,\"untimed\":%lld,\"waits\":%lld,"
		"\"wait_ns\":%lld,\"event_queries\":%lld,\"max_poll_queries\":%lld,\"min_excess_ns\":%lld,"
		"\"shim_ns\":%lld,\"shim_launches\":%lld,\"gapped\":%lld,\"idle_samples\":\"%s\",\"wakeups\":%lld}\n",
		hp_baseline_events ? "events" : "profile", (long long)stats.untracked, (long long)stats.captured, (long long)stats.failed_events,
		(long long)stats.untimed, (long long)stats.waits, (long long)stats.wait_ns,
		(long long)stats.event_queries, (long long)stats.max_poll_queries,
		(long long)(stats.excess_seen ? stats.min_excess_ns : -1), (long long)stats.shim_ns,
		(long long)stats.shim_launches, (long long)stats.gapped, idle_samples_leave_out ? "leave-out" : "from-launch",
		(long long)stats.wakeups);
	if (fclose(f) == 0)
		rename(tmp, stats_out);
}
