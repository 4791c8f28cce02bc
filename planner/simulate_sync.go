package planner

import (
	"cmp"
	"math"
)

// AllReduceBucketBytes is the size of the gradient buckets data parallelism all-reduces one
// after another (PyTorch DDP's and Sailor's 500 MB).
const AllReduceBucketBytes = 5e8

// AllReduceTime is how long a ring all-reduce of bytes among d participants takes when every
// step waits for the slowest of links: each bucket of AllReduceBucketBytes (and the last,
// partial one) takes 2(d−1) steps, each moving bucket/d bytes. It is 0 for d < 2 or no links.
func AllReduceTime(bytes float64, d int, links ...Link) float64 {
	if d < 2 || bytes <= 0 || len(links) == 0 {
		return 0
	}
	steps := 2 * float64(d-1)
	full := math.Floor(bytes / AllReduceBucketBytes)
	rest := bytes - full*AllReduceBucketBytes
	var t float64
	if full > 0 {
		t += full * steps * slowest(links, AllReduceBucketBytes/float64(d))
	}
	if rest > 0 {
		t += steps * slowest(links, rest/float64(d))
	}
	return t
}

func slowest(links []Link, bytes float64) float64 {
	var t float64
	for _, l := range links {
		t = math.Max(t, l.Time(bytes))
	}
	return t
}

// endpointCount is one distinct place a stage's replicas sit, and how many sit there.
type endpointCount struct {
	ep Endpoint
	n  int
}

// stageSync is the time of stage st's gradient all-reduce and the egress it pays.
//
// The ring visits the replicas grouped by endpoint, the endpoints ordered by region, then
// zone, so the ring crosses each zone (and region) boundary as few times as possible: once
// into each group and once out. Each step waits for the slowest link the ring uses: between
// two replicas of one endpoint (Network.Between of the endpoint with itself) and between
// neighbouring groups, wrapping around. With three groups or fewer that is every pair.
//
// A replica of TP t holds 1/t of the stage's gradients on each GPU and the t shards
// all-reduce in parallel, so with mixed TP degrees the replica with the smallest degree sets
// the bytes each ring moves. Every GPU of a machine runs such a ring at the same time (all
// stages synchronise at once), so each link is shared by the sender's GPUs per machine
// (Link.SharedBy). Every ring edge carries 2(D−1)/D of the stage's full gradients;
// edges that cross zones pay egress on that.
func (s *Sim) stageSync(st *Stage) (seconds, egressUSD float64) {
	d := len(st.Replicas)
	if d < 2 {
		return 0, 0
	}
	minTP := st.Replicas[0].TP
	var buf [4]endpointCount
	eps := buf[:0]
	last := 0 // index in eps of the previous replica's endpoint
	for j := range st.Replicas {
		r := &st.Replicas[j]
		if r.TP < minTP {
			minTP = r.TP
		}
		if j > 0 && *r == st.Replicas[j-1] {
			eps[last].n++ // the usual case: the same kind of replica as the one before
			continue
		}
		e := r.Endpoint()
		last = -1
		for k := range eps {
			if eps[k].ep == e {
				last = k
				break
			}
		}
		if last < 0 {
			last = len(eps)
			eps = append(eps, endpointCount{ep: e})
		}
		eps[last].n++
	}
	sortEndpoints(eps)

	mp := s.memFor(minTP) // present: Simulate checked every replica's TP
	shardBytes := (mp.params[st.LastLayer+1] - mp.params[st.FirstLayer]) * GradBytesPerParam
	edgeGB := 2 * float64(d-1) / float64(d) * shardBytes * float64(minTP) / 1e9

	var lbuf [8]Link
	links := lbuf[:0]
	for k := range eps {
		a := eps[k].ep
		if eps[k].n > 1 {
			links = append(links, s.link(a, a).SharedBy(a.GPUsPerNode))
		}
		if len(eps) > 1 {
			b := eps[(k+1)%len(eps)].ep
			links = append(links, s.link(a, b).SharedBy(a.GPUsPerNode))
			if a.Zone != b.Zone {
				egressUSD += edgeGB * s.net.EgressUSDPerGB(a, b)
			}
		}
	}
	return AllReduceTime(shardBytes, d, links...), egressUSD
}

// sortEndpoints orders a handful of endpoints by region, zone, GPU type and machine size.
func sortEndpoints(eps []endpointCount) {
	for i := 1; i < len(eps); i++ {
		for k := i; k > 0 && endpointLess(eps[k].ep, eps[k-1].ep); k-- {
			eps[k], eps[k-1] = eps[k-1], eps[k]
		}
	}
}

func endpointLess(a, b Endpoint) bool {
	return cmp.Or(cmp.Compare(a.Region, b.Region), cmp.Compare(a.Zone, b.Zone), cmp.Compare(a.GPU, b.GPU),
		cmp.Compare(a.GPUsPerNode, b.GPUsPerNode)) < 0
}
