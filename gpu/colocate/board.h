/*
 * The scoreboard that the colocation runtime's processes share (a file in /dev/shm, mapped by
 * the launch shim in the HP and BE programs and by the Go supervisor), and the admission rule
 * the BE shim applies before every kernel launch. Plain C, no CUDA: the same file is compiled
 * into the shim on the GPU machine and, through cgo, into the Go package whose simulated GPU
 * tests the rule in CI.
 *
 * Every field is a 64-bit integer read and written with the compiler's atomic builtins, so the
 * layout is the same for every compiler that maps the file (no _Atomic, which cgo cannot read).
 */
#ifndef SCHOONER_COLOCATE_BOARD_H
#define SCHOONER_COLOCATE_BOARD_H

#include <stdint.h>

#define SCH_BOARD_MAGIC 0x3130434f4c4f4353ULL /* "SCOLOC01" little-endian */
#define SCH_BOARD_VERSION 3

/* Kernel bounds, as colocation.Bound. */
enum { SCH_UNKNOWN = 0, SCH_COMPUTE = 1, SCH_MEMORY = 2 };

/* The BE side's state, as colocation.BEState. */
enum { SCH_RUNNING = 0, SCH_THROTTLED = 1, SCH_EVICTED = 2 };

/* Verdicts of sch_admit: admit (HP idle, or beside running HP work) or wait, and why. */
enum {
	SCH_WAIT_PAUSED = -4, /* the supervisor throttled or evicted the BE side */
	SCH_WAIT_SMS = -3,    /* beside HP work, but the BE SMs would exceed the limit */
	SCH_WAIT_HP = -2,     /* HP work running, and this kernel does not complement it */
	SCH_WAIT_BUDGET = -1, /* outstanding BE work would exceed the budget */
	SCH_ADMIT_IDLE = 1,   /* HP idle */
	SCH_ADMIT_BESIDE = 2  /* complements the running HP work, within SMs and budget */
};

typedef struct {
	uint64_t magic;
	uint32_t version;
	uint32_t sm_count; /* the device's SMs, from the device at start */

	/* Control, written by the supervisor. */
	int64_t budget_ns; /* cap on outstanding BE work (profiled durations) */
	int64_t idle_budget_ns; /* the cap while HP is idle, when larger than budget_ns (0: none) */
	int64_t sm_limit;  /* SMs BE kernels may hold beside running HP work */
	int64_t be_state;  /* SCH_RUNNING, SCH_THROTTLED, SCH_EVICTED */

	/* HP side, written by the HP shim. */
	int64_t hp_outstanding; /* kernels launched, not yet complete */
	int64_t hp_compute;     /* of which compute-bound */
	int64_t hp_memory;      /* of which memory-bound */
	int64_t hp_kernels;     /* completed, cumulative */
	int64_t hp_measured_ns; /* cumulative time from eligible to complete of those */
	int64_t hp_fastest_ns;  /* cumulative fastest time seen for the same kernels and shapes */

	/* BE side, written by the BE shim. */
	int64_t be_outstanding;     /* kernels launched, not yet complete */
	int64_t be_outstanding_ns;  /* their profiled durations */
	int64_t be_outstanding_sms; /* SMs of those launched beside HP work */
	int64_t be_kernels;         /* completed, cumulative */
	int64_t be_admitted_idle;   /* admissions by verdict, cumulative */
	int64_t be_admitted_beside;
	int64_t be_waits;   /* launches that had to wait at least once */
	int64_t be_wait_ns; /* total time BE launches waited */
	/* Those waits by the SCH_WAIT_* verdict that first held them, at index -verdict - 1:
	 * the budget, HP work running that the kernel did not complement, the SM limit beside
	 * it, the BE side paused. */
	int64_t be_waits_by[4];

	int64_t reserved[11];
} sch_board;

/* A copy of the board's counters at one moment, for the supervisor. */
typedef struct {
	int64_t budget_ns, sm_limit, be_state;
	int64_t hp_outstanding, hp_kernels, hp_measured_ns, hp_fastest_ns;
	int64_t be_outstanding, be_outstanding_ns, be_kernels;
	int64_t be_admitted_idle, be_admitted_beside, be_waits, be_wait_ns;
	int64_t be_waits_by[4]; /* as the board's */
	int64_t sm_count;
} sch_snapshot;

void sch_board_init(sch_board *b, uint32_t sm_count, int64_t budget_ns, int64_t sm_limit);
int sch_board_valid(const sch_board *b);

/* What one BE kernel is charged against the budget: its profiled duration alone, or, when it
 * has none yet, the whole budget as it stands (so an unprofiled kernel runs alone). The caller
 * keeps the charge and passes the same value to sch_admit, sch_be_launched and
 * sch_be_completed, so a budget changed in between does not skew the books. */
int64_t sch_charge_ns(const sch_board *b, int64_t profiled_ns);

/* The admission rule for one BE kernel: charge_ns from sch_charge_ns, sms the SMs its grid
 * occupies, bound its SCH_COMPUTE/SCH_MEMORY/SCH_UNKNOWN. Returns an SCH_ADMIT_* or
 * SCH_WAIT_* verdict. */
int sch_admit(sch_board *b, int64_t charge_ns, int64_t sms, int bound);

/* Bookkeeping around an admitted BE kernel: call launched with the verdict sch_admit gave, and
 * completed with the same arguments once the kernel is done. */
void sch_be_launched(sch_board *b, int verdict, int64_t charge_ns, int64_t sms);
void sch_be_completed(sch_board *b, int verdict, int64_t charge_ns, int64_t sms);
/* A BE launch waited wait_ns before its admission; first is the SCH_WAIT_* verdict that first
 * held it. */
void sch_be_waited(sch_board *b, int64_t wait_ns, int first);

/* Bookkeeping of the HP side: every HP kernel at launch and at completion, with the time it
 * took from eligible to complete and the fastest time seen for it. */
void sch_hp_launched(sch_board *b, int bound);
void sch_hp_completed(sch_board *b, int bound, int64_t measured_ns, int64_t fastest_ns);

/* Takes a side's outstanding work off the books when its process ended without doing so
 * (killed): its kernels no longer run. */
void sch_reset_hp(sch_board *b);
void sch_reset_be(sch_board *b);

void sch_set_control(sch_board *b, int64_t budget_ns, int64_t sm_limit, int64_t be_state);
void sch_set_idle_budget(sch_board *b, int64_t idle_budget_ns);
void sch_snapshot_read(const sch_board *b, sch_snapshot *s);

#endif
