package loadgen

import (
	"math"
	"math/bits"
	"time"
)

// subBucketBits sets the histogram's precision: every power of two is split
// into 2^subBucketBits buckets of equal width, so a bucket is at most 1/128
// of the values it holds wide and its midpoint is within 0.4% of any of
// them. Values below 2^subBucketBits nanoseconds have a bucket each.
const subBucketBits = 7

// Histogram counts latencies in log-linear buckets: exact below 128ns,
// then 128 buckets per power of two. Quantiles are within 0.4% of the exact
// value (the midpoint of a bucket against anything in it), the minimum and
// maximum are exact, and memory grows with the logarithm of the largest
// value (at most 32 KiB for latencies up to a second), never with the
// number of samples. A Histogram is not safe for concurrent use.
type Histogram struct {
	counts   []uint64
	total    uint64
	sum      float64 // nanoseconds, for the mean
	min, max int64
}

// bucketOf returns the index of the bucket holding v nanoseconds (v >= 0).
func bucketOf(v int64) int {
	shift := max(bits.Len64(uint64(v))-subBucketBits-1, 0)
	return shift<<subBucketBits + int(v>>shift)
}

// bucketRange returns the smallest and largest value of bucket i.
func bucketRange(i int) (lo, hi int64) {
	shift := max(i>>subBucketBits-1, 0)
	mantissa := int64(i - shift<<subBucketBits)
	lo = mantissa << shift
	return lo, lo + 1<<shift - 1
}

// Record adds one latency; negative ones count as zero.
func (h *Histogram) Record(d time.Duration) {
	v := max(int64(d), 0)
	i := bucketOf(v)
	if i >= len(h.counts) {
		// Grow by powers of two so that recording stays amortized O(1).
		grown := make([]uint64, max(i+1, 2*len(h.counts)))
		copy(grown, h.counts)
		h.counts = grown
	}
	h.counts[i]++
	if h.total == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.total++
	h.sum += float64(v)
}

// Merge adds every sample of o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.total == 0 {
		return
	}
	if len(o.counts) > len(h.counts) {
		grown := make([]uint64, len(o.counts))
		copy(grown, h.counts)
		h.counts = grown
	}
	for i, n := range o.counts {
		h.counts[i] += n
	}
	if h.total == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.total += o.total
	h.sum += o.sum
}

// Reset forgets every sample and keeps the memory.
func (h *Histogram) Reset() {
	clear(h.counts)
	h.total, h.sum, h.min, h.max = 0, 0, 0, 0
}

// Count returns the number of samples.
func (h *Histogram) Count() uint64 { return h.total }

// Min returns the smallest sample, exactly; 0 when there is none.
func (h *Histogram) Min() time.Duration { return time.Duration(h.min) }

// Max returns the largest sample, exactly; 0 when there is none.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Mean returns the average of the samples; 0 when there is none.
func (h *Histogram) Mean() time.Duration {
	if h.total == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.total))
}

// Quantile returns the sample of rank ceil(q×Count) (q in [0, 1]; 0 gives
// the minimum, 1 the maximum), to within 0.4%: the middle of its bucket,
// kept within the exact minimum and maximum. It is 0 when there is no
// sample.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.total)))
	if rank <= 1 {
		return time.Duration(h.min)
	}
	if rank >= h.total {
		return time.Duration(h.max)
	}
	var seen uint64
	for i, n := range h.counts {
		seen += n
		if seen >= rank {
			lo, hi := bucketRange(i)
			mid := lo + (hi-lo)/2
			return time.Duration(min(max(mid, h.min), h.max))
		}
	}
	return time.Duration(h.max)
}
