/* The scoreboard's bookkeeping and the admission rule (see board.h). */
#include "board.h"

#include <string.h>

#define LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_ACQ_REL)

void sch_board_init(sch_board *b, uint32_t sm_count, int64_t budget_ns, int64_t sm_limit)
{
	memset(b, 0, sizeof *b);
	b->version = SCH_BOARD_VERSION;
	b->sm_count = sm_count;
	b->budget_ns = budget_ns;
	b->sm_limit = sm_limit;
	b->be_state = SCH_RUNNING;
	/* The magic last: a reader that sees it sees an initialized board. */
	__atomic_store_n(&b->magic, SCH_BOARD_MAGIC, __ATOMIC_RELEASE);
}

int sch_board_valid(const sch_board *b)
{
	return __atomic_load_n(&b->magic, __ATOMIC_ACQUIRE) == SCH_BOARD_MAGIC && b->version == SCH_BOARD_VERSION;
}

/* The bound of the HP work now outstanding: one bound when all of it shares it, SCH_UNKNOWN
 * when it is mixed or includes kernels not yet profiled (then nothing complements it). */
static int hp_bound(sch_board *b, int64_t outstanding)
{
	int64_t c = LOAD(&b->hp_compute), m = LOAD(&b->hp_memory);
	if (c == outstanding && m == 0)
		return SCH_COMPUTE;
	if (m == outstanding && c == 0)
		return SCH_MEMORY;
	return SCH_UNKNOWN;
}

int64_t sch_charge_ns(const sch_board *b, int64_t profiled_ns)
{
	return profiled_ns > 0 ? profiled_ns : __atomic_load_n(&b->budget_ns, __ATOMIC_ACQUIRE);
}

int sch_admit(sch_board *b, int64_t charge_ns, int64_t sms, int bound)
{
	if (LOAD(&b->be_state) != SCH_RUNNING)
		return SCH_WAIT_PAUSED;
	int64_t budget = LOAD(&b->budget_ns);
	int64_t out = LOAD(&b->be_outstanding);
	int64_t out_ns = LOAD(&b->be_outstanding_ns);
	int64_t hp = LOAD(&b->hp_outstanding);
	if (hp <= 0) {
		/* HP idle: BE fills the GPU, but never with more queued work than an arriving HP
		 * kernel could bear waiting for: the budget, or the idle budget where that is larger
		 * (under MPS with the BE side at low priority an arriving HP kernel waits for the BE
		 * blocks running, not for the queue; a deeper queue then costs it little and keeps a
		 * program of many small kernels fed). One kernel always goes when none is out, or a
		 * kernel longer than the cap would starve (the supervisor sees what it costs). */
		int64_t cap = LOAD(&b->idle_budget_ns);
		if (cap < budget)
			cap = budget;
		if (out == 0 || out_ns + charge_ns <= cap)
			return SCH_ADMIT_IDLE;
		return SCH_WAIT_BUDGET;
	}
	int hb = hp_bound(b, hp);
	if (bound == SCH_UNKNOWN || hb == SCH_UNKNOWN || bound == hb)
		return SCH_WAIT_HP;
	if (LOAD(&b->be_outstanding_sms) + sms > LOAD(&b->sm_limit))
		return SCH_WAIT_SMS;
	if (out_ns + charge_ns > budget)
		return SCH_WAIT_BUDGET;
	return SCH_ADMIT_BESIDE;
}

void sch_be_launched(sch_board *b, int verdict, int64_t charge_ns, int64_t sms)
{
	ADD(&b->be_outstanding, 1);
	ADD(&b->be_outstanding_ns, charge_ns);
	if (verdict == SCH_ADMIT_BESIDE) {
		ADD(&b->be_outstanding_sms, sms);
		ADD(&b->be_admitted_beside, 1);
	} else {
		ADD(&b->be_admitted_idle, 1);
	}
}

void sch_be_completed(sch_board *b, int verdict, int64_t charge_ns, int64_t sms)
{
	ADD(&b->be_outstanding, -1);
	ADD(&b->be_outstanding_ns, -charge_ns);
	if (verdict == SCH_ADMIT_BESIDE)
		ADD(&b->be_outstanding_sms, -sms);
	ADD(&b->be_kernels, 1);
}

void sch_be_waited(sch_board *b, int64_t wait_ns, int first)
{
	ADD(&b->be_waits, 1);
	ADD(&b->be_wait_ns, wait_ns);
	if (first >= SCH_WAIT_PAUSED && first <= SCH_WAIT_BUDGET)
		ADD(&b->be_waits_by[-first - 1], 1);
}

void sch_hp_launched(sch_board *b, int bound)
{
	if (bound == SCH_COMPUTE)
		ADD(&b->hp_compute, 1);
	else if (bound == SCH_MEMORY)
		ADD(&b->hp_memory, 1);
	ADD(&b->hp_outstanding, 1);
}

void sch_hp_completed(sch_board *b, int bound, int64_t measured_ns, int64_t fastest_ns)
{
	ADD(&b->hp_outstanding, -1);
	if (bound == SCH_COMPUTE)
		ADD(&b->hp_compute, -1);
	else if (bound == SCH_MEMORY)
		ADD(&b->hp_memory, -1);
	ADD(&b->hp_measured_ns, measured_ns);
	ADD(&b->hp_fastest_ns, fastest_ns);
	ADD(&b->hp_kernels, 1);
}

void sch_reset_hp(sch_board *b)
{
	STORE(&b->hp_outstanding, 0);
	STORE(&b->hp_compute, 0);
	STORE(&b->hp_memory, 0);
}

void sch_reset_be(sch_board *b)
{
	STORE(&b->be_outstanding, 0);
	STORE(&b->be_outstanding_ns, 0);
	STORE(&b->be_outstanding_sms, 0);
}

void sch_set_control(sch_board *b, int64_t budget_ns, int64_t sm_limit, int64_t be_state)
{
	STORE(&b->budget_ns, budget_ns);
	STORE(&b->sm_limit, sm_limit);
	STORE(&b->be_state, be_state);
}

void sch_set_idle_budget(sch_board *b, int64_t idle_budget_ns)
{
	STORE(&b->idle_budget_ns, idle_budget_ns);
}

void sch_snapshot_read(const sch_board *b, sch_snapshot *s)
{
	sch_board *m = (sch_board *)b;
	s->budget_ns = LOAD(&m->budget_ns);
	s->sm_limit = LOAD(&m->sm_limit);
	s->be_state = LOAD(&m->be_state);
	s->hp_outstanding = LOAD(&m->hp_outstanding);
	s->hp_kernels = LOAD(&m->hp_kernels);
	s->hp_measured_ns = LOAD(&m->hp_measured_ns);
	s->hp_fastest_ns = LOAD(&m->hp_fastest_ns);
	s->be_outstanding = LOAD(&m->be_outstanding);
	s->be_outstanding_ns = LOAD(&m->be_outstanding_ns);
	s->be_kernels = LOAD(&m->be_kernels);
	s->be_admitted_idle = LOAD(&m->be_admitted_idle);
	s->be_admitted_beside = LOAD(&m->be_admitted_beside);
	s->be_waits = LOAD(&m->be_waits);
	s->be_wait_ns = LOAD(&m->be_wait_ns);
	for (int i = 0; i < 4; i++)
		s->be_waits_by[i] = LOAD(&m->be_waits_by[i]);
	s->sm_count = __atomic_load_n(&m->sm_count, __ATOMIC_ACQUIRE);
}
