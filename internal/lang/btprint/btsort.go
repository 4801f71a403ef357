package btprint

import "math/bits"

// stdSort sorts s by less exactly as libstdc++'s std::sort (introsort:
// median-of-three quicksort down to runs of 16, heapsort when too deep, a
// final insertion sort) does, so that entries with equal sort values end
// in the order bpftrace prints them. It is not stable: for more than 16
// elements, equal elements may be reordered, as in bpftrace.
//
// Source: libstdc++ bits/stl_algo.h (__introsort_loop, __final_insertion_sort,
// __unguarded_partition_pivot, __move_median_to_first) and bits/stl_heap.h.
func stdSort(s []int, less func(a, b int) bool) {
	if len(s) < 2 {
		return
	}
	introsortLoop(s, 0, len(s), 2*(bits.Len(uint(len(s)))-1), less)
	finalInsertionSort(s, 0, len(s), less)
}

// sortThreshold is libstdc++'s _S_threshold.
const sortThreshold = 16

func introsortLoop(s []int, first, last, depth int, less func(a, b int) bool) {
	for last-first > sortThreshold {
		if depth == 0 {
			heapSort(s[first:last], less)
			return
		}
		depth--
		cut := partitionPivot(s, first, last, less)
		introsortLoop(s, cut, last, depth, less)
		last = cut
	}
}

func partitionPivot(s []int, first, last int, less func(a, b int) bool) int {
	mid := first + (last-first)/2
	moveMedianToFirst(s, first, first+1, mid, last-1, less)
	// Hoare partition around s[first], unguarded: the median of three
	// stops both scans.
	lo, hi := first+1, last
	for {
		for less(s[lo], s[first]) {
			lo++
		}
		hi--
		for less(s[first], s[hi]) {
			hi--
		}
		if lo >= hi {
			return lo
		}
		s[lo], s[hi] = s[hi], s[lo]
		lo++
	}
}

func moveMedianToFirst(s []int, result, a, b, c int, less func(a, b int) bool) {
	swap := func(i int) { s[result], s[i] = s[i], s[result] }
	switch {
	case less(s[a], s[b]):
		switch {
		case less(s[b], s[c]):
			swap(b)
		case less(s[a], s[c]):
			swap(c)
		default:
			swap(a)
		}
	case less(s[a], s[c]):
		swap(a)
	case less(s[b], s[c]):
		swap(c)
	default:
		swap(b)
	}
}

func finalInsertionSort(s []int, first, last int, less func(a, b int) bool) {
	if last-first <= sortThreshold {
		insertionSort(s, first, last, less)
		return
	}
	insertionSort(s, first, first+sortThreshold, less)
	for i := first + sortThreshold; i < last; i++ {
		linearInsert(s, i, less)
	}
}

func insertionSort(s []int, first, last int, less func(a, b int) bool) {
	for i := first + 1; i < last; i++ {
		if less(s[i], s[first]) {
			v := s[i]
			copy(s[first+1:i+1], s[first:i])
			s[first] = v
			continue
		}
		linearInsert(s, i, less)
	}
}

// linearInsert moves s[i] down while it is less than its left neighbour;
// callers guarantee a smaller-or-equal element to its left stops it.
func linearInsert(s []int, i int, less func(a, b int) bool) {
	v := s[i]
	for less(v, s[i-1]) {
		s[i] = s[i-1]
		i--
	}
	s[i] = v
}

// heapSort is libstdc++'s __partial_sort(first, last, last): make_heap,
// then sort_heap.
func heapSort(s []int, less func(a, b int) bool) {
	n := len(s)
	if n < 2 {
		return
	}
	for parent := (n - 2) / 2; ; parent-- {
		adjustHeap(s, parent, n, s[parent], less)
		if parent == 0 {
			break
		}
	}
	for last := n - 1; last > 0; last-- {
		v := s[last]
		s[last] = s[0]
		adjustHeap(s, 0, last, v, less)
	}
}

func adjustHeap(s []int, hole, n, v int, less func(a, b int) bool) {
	top := hole
	child := hole
	for child < (n-1)/2 {
		child = 2 * (child + 1)
		if less(s[child], s[child-1]) {
			child--
		}
		s[hole] = s[child]
		hole = child
	}
	if n&1 == 0 && child == (n-2)/2 {
		child = 2 * (child + 1)
		s[hole] = s[child-1]
		hole = child - 1
	}
	parent := (hole - 1) / 2
	for hole > top && less(s[parent], v) {
		s[hole] = s[parent]
		hole = parent
		parent = (hole - 1) / 2
	}
	s[hole] = v
}
