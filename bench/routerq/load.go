package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"
)

// load is the bursty open-loop arrival process: bursts at burst × the worker's capacity for
// on, then quiet × capacity for off, repeated; Poisson arrivals within each phase.
type load struct {
	Capacity float64       // requests a second the worker can finish
	Burst    float64       // rate during a burst, in multiples of Capacity
	Quiet    float64       // rate between bursts, in multiples of Capacity
	On, Off  time.Duration // lengths of a burst and of the quiet after it
}

// schedule is the arrival times of one run, from its start, for seed: the same seed gives the
// same schedule, so both queues of a repeat see identical arrivals.
func (l load) schedule(seed uint64, d time.Duration) []time.Duration {
	rng := rand.New(rand.NewPCG(seed, 0x726f757465727100))
	var at []time.Duration
	period := l.On + l.Off
	for t := time.Duration(0); t < d; {
		phase := t % period
		rate, end := l.Burst*l.Capacity, t-phase+l.On
		if phase >= l.On {
			rate, end = l.Quiet*l.Capacity, t-phase+period
		}
		end = min(end, d)
		if rate <= 0 {
			t = end
			continue
		}
		// Exponential gaps are memoryless, so restarting at a phase boundary keeps each phase
		// Poisson at its own rate.
		gap := time.Duration(rng.ExpFloat64() / rate * float64(time.Second))
		if t+gap >= end {
			t = end
			continue
		}
		t += gap
		at = append(at, t)
	}
	return at
}

// mean is the offered load in requests a second, averaged over a period.
func (l load) mean() float64 {
	return l.Capacity * (l.Burst*l.On.Seconds() + l.Quiet*l.Off.Seconds()) / (l.On + l.Off).Seconds()
}

// result is what the client saw of one request.
type result struct {
	Index     int
	Scheduled time.Duration // arrival, from the start of the run
	SendLag   time.Duration // how late the client sent it (the load generator's own delay)
	Status    int           // HTTP status; 0 when the request failed before a response
	ID        string        // the completion's id, which OnDispatch reports under
	E2E       time.Duration // send to the whole answer read
	Tokens    int           // completion tokens received
	Err       string
}

// completionBody is the request every arrival sends: a short prompt of token ids, a fixed
// number of tokens, the arrival's index as seed.
type completionBody struct {
	Model       string  `json:"model"`
	Prompt      []int   `json:"prompt"`
	MaxTokens   int     `json:"max_tokens"`
	Seed        int64   `json:"seed"`
	Temperature float64 `json:"temperature"`
}

// drive sends the arrivals of sched to url open-loop: clients goroutines take every clients-th
// arrival each, with their own connection pool, and send each on its own goroutine at its
// time, so a slow answer never holds back the next arrival (no coordinated omission). It
// returns once every request has its answer or failed.
func drive(url, model string, sched []time.Duration, clients, maxTokens int, timeout time.Duration) []result {
	results := make([]result, len(sched))
	start := time.Now()
	var wg sync.WaitGroup
	for c := range clients {
		tr := &http.Transport{MaxIdleConnsPerHost: 1024, IdleConnTimeout: time.Minute}
		hc := &http.Client{Transport: tr, Timeout: timeout}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var reqs sync.WaitGroup
			for i := c; i < len(sched); i += clients {
				if d := time.Until(start.Add(sched[i])); d > 0 {
					time.Sleep(d)
				}
				reqs.Add(1)
				go func() {
					defer reqs.Done()
					results[i] = send(hc, url, model, i, sched[i], start, maxTokens)
				}()
			}
			reqs.Wait()
			tr.CloseIdleConnections()
		}()
	}
	wg.Wait()
	return results
}

// send posts one completion and reads the whole answer.
func send(hc *http.Client, url, model string, i int, scheduled time.Duration, start time.Time, maxTokens int) result {
	body, _ := json.Marshal(completionBody{Model: model, Prompt: []int{104, 101, 108, 108, 111, 33, 32, 105}, MaxTokens: maxTokens,
		Seed: int64(i), Temperature: 0})
	sent := time.Now()
	r := result{Index: i, Scheduled: scheduled, SendLag: sent.Sub(start) - scheduled}
	resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		r.E2E, r.Err = time.Since(sent), err.Error()
		return r
	}
	raw, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	r.E2E, r.Status = time.Since(sent), resp.StatusCode
	if err != nil {
		r.Err = "reading the answer: " + err.Error()
		return r
	}
	if resp.StatusCode != http.StatusOK {
		r.Err = fmt.Sprintf("HTTP %d", resp.StatusCode)
		return r
	}
	var c struct {
		ID      string `json:"id"`
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(raw, &c); err != nil || len(c.Choices) != 1 {
		r.Err = fmt.Sprintf("decoding the answer %q", raw)
		return r
	}
	r.ID, r.Tokens = c.ID, len(c.Choices[0].Text)
	if r.Tokens != maxTokens {
		r.Err = fmt.Sprintf("%d tokens, want %d", r.Tokens, maxTokens)
	}
	return r
}
