package simgpu

import (
	"time"

	"github.com/schooner-ml/schooner/gpu/colocate"
)

// hpClient serves Poisson-arriving requests: each launches its kernels back to back on the HP
// stream; its latency is arrival to the last kernel's end. With a board it keeps the books the
// HP shim keeps: outstanding kernels by bound, and each kernel's time from eligible to done
// against the fastest seen for it.
type hpClient struct {
	g         *gpu
	s         *stream
	sc        Scenario
	board     *colocate.Board
	fastest   map[string]time.Duration
	latencies []time.Duration
	hostFree  time.Duration // when the host thread is done launching the previous request
}

func (c *hpClient) start() { c.g.at(c.nextGap(), c.arrive) }

func (c *hpClient) nextGap() time.Duration {
	return time.Duration(c.g.rng.ExpFloat64() * float64(c.sc.Arrival))
}

func (c *hpClient) arrive() {
	arrived := c.g.now
	t := max(arrived, c.hostFree)
	remaining := len(c.sc.HP)
	for _, k := range c.sc.HP {
		t += c.sc.Launch
		c.g.at(t, func() {
			if c.board != nil {
				c.board.HPLaunched(k.Bound)
			}
			c.g.enqueue(c.s, k, func(l *launch, now time.Duration) {
				c.completed(l, now)
				if remaining--; remaining == 0 {
					c.latencies = append(c.latencies, now-arrived)
				}
			})
		})
	}
	c.hostFree = t
	c.g.at(c.g.now+c.nextGap(), c.arrive)
}

func (c *hpClient) completed(l *launch, now time.Duration) {
	if c.board == nil {
		return
	}
	measured := now - l.eligibleAt
	f, ok := c.fastest[l.k.Name]
	if !ok || measured < f {
		f = measured
		c.fastest[l.k.Name] = f
	}
	c.g.at(now+c.sc.Poll, func() { c.board.HPCompleted(l.k.Bound, measured, f) })
}

// beClient runs its kernel loop. Ungated it keeps BEDepth kernels queued; gated it asks the
// admission rule before each launch and, refused, asks again a poll later, as the BE shim does.
type beClient struct {
	g           *gpu
	s           *stream
	sc          Scenario
	board       *colocate.Board // nil: ungated
	next        int
	outstanding int
	work        time.Duration // alone-time of the kernels completed: the BE side's progress
	waitingFrom time.Duration
	firstWait   colocate.Verdict // what first held the launch now waiting
	waiting     bool
	trying      bool
}

func (c *beClient) start() { c.g.at(0, c.fill) }

func (c *beClient) kernel() Kernel { return c.sc.BE[c.next%len(c.sc.BE)] }

// fill launches what it may now; it is called again when a kernel completes or a poll passes.
func (c *beClient) fill() {
	c.trying = false
	for c.outstanding < c.sc.BEDepth {
		k := c.kernel()
		alone := k.Alone(c.sc.SMs)
		sms := min(k.Blocks, c.sc.SMs)
		v := colocate.AdmitIdle
		var charge time.Duration
		if c.board != nil {
			charge = c.board.Charge(alone)
			v = c.board.Admit(charge, sms, k.Bound)
			if !v.Admitted() {
				if !c.waiting {
					c.waiting, c.waitingFrom, c.firstWait = true, c.g.now, v
				}
				c.retryAt(c.g.now + c.sc.Poll)
				return
			}
			if c.waiting {
				c.board.BEWaited(c.g.now-c.waitingFrom, c.firstWait)
				c.waiting = false
			}
			c.board.BELaunched(v, charge, sms)
		}
		c.next++
		c.outstanding++
		c.g.at(c.g.now+c.sc.Launch, func() {
			c.g.enqueue(c.s, k, func(_ *launch, now time.Duration) {
				c.g.at(now+c.sc.Poll, func() {
					c.outstanding--
					c.work += alone
					if c.board != nil {
						c.board.BECompleted(v, charge, sms)
					}
					c.retryAt(c.g.now)
				})
			})
		})
	}
}

func (c *beClient) retryAt(t time.Duration) {
	if c.trying {
		return
	}
	c.trying = true
	c.g.at(t, c.fill)
}
