// A model of PyTorch's CUDA caching allocator: the rules and their sources are in
// caching_allocator.hpp. The data structures are this file's own (an index-linked list of blocks
// per segment, one ordered set per pool); only the decisions follow PyTorch's.
#include "estimate/caching_allocator.hpp"

#include <algorithm>
#include <limits>

namespace trainmem::detail {

namespace caching_allocator {

uint64_t round_size(uint64_t bytes) {
  if (bytes < k_min_block_size) return k_min_block_size;
  return k_min_block_size * ((bytes + k_min_block_size - 1) / k_min_block_size);
}

uint64_t allocation_size(uint64_t rounded) {
  if (rounded <= k_small_size) return k_small_buffer;
  if (rounded < k_min_large_alloc) return k_large_buffer;
  return k_round_large * ((rounded + k_round_large - 1) / k_round_large);
}

}  // namespace caching_allocator

using namespace caching_allocator;

void CachingAllocatorModel::reset(AllocatorOptions options) {
  options_ = options;
  blocks_.clear();
  spare_.clear();
  segments_.clear();
  small_pool_.clear();
  large_pool_.clear();
  block_of_.clear();
  pending_.clear();
  pending_done_ = 0;
  for (auto& per_stream : expandable_) per_stream[0] = per_stream[1] = -1;
  reserved_ = allocated_ = 0;
  peaks_ = AllocatorPeaks{};
}

int32_t CachingAllocatorModel::new_block(Block b) {
  if (!spare_.empty()) {
    const int32_t i = spare_.back();
    spare_.pop_back();
    blocks_[size_t(i)] = b;
    return i;
  }
  blocks_.push_back(b);
  return int32_t(blocks_.size() - 1);
}

bool CachingAllocatorModel::should_split(const Block& b, uint64_t size) const {
  const uint64_t remaining = b.size - size;
  if (b.small || options_.expandable_segments) return remaining >= k_min_block_size;
  return size < options_.max_split_size && remaining > k_small_size;
}

// get_free_block: the smallest cached block of the pool and stream that holds `size`, taken out
// of the pool; -1 when there is none or the oversize rules refuse the first candidate.
int32_t CachingAllocatorModel::find_free(uint64_t size, bool small, uint8_t stream) {
  Pool& p = pool(small);
  const uint64_t stream_end = order_of(uint8_t(stream + 1), 0);
  auto it = p.lower_bound(Key{order_of(stream, size), 0, -1});
  if (it == p.end() || it->order >= stream_end) return -1;
  if (options_.expandable_segments) {
    // The free block at the mapped end of the segment counts as large as it could grow, so the
    // next larger cached block of the stream, whose size is its whole expandable size, comes
    // before it.
    const Block& blk = blocks_[size_t(it->block)];
    const auto after = std::next(it);
    if (segments_[size_t(blk.segment)].last == it->block && after != p.end() && after->order < stream_end) it = after;
  }
  const uint64_t found = blocks_[size_t(it->block)].size;
  const uint64_t split_limit = options_.max_split_size;
  if (size < split_limit && found >= split_limit) return -1;
  if (size >= split_limit && found >= size + k_large_buffer) return -1;
  const int32_t b = it->block;
  p.erase(it);
  return b;
}

// alloc_block without expandable segments: a new segment of `size` bytes, handed out whole.
int32_t CachingAllocatorModel::new_segment(uint64_t size, bool small, uint8_t stream) {
  const int32_t seg = int32_t(segments_.size());
  const int32_t b = new_block({0, size, seg, -1, -1, false, small, stream});
  segments_.push_back({small, stream, size, b});
  reserved_ += size;
  ++peaks_.segments;
  return b;
}

// try_allocate_expandable_block: map pages at the end of the pool's and stream's segment (creating
// it the first time), merged with the free block already at its end, until a free block holds
// `size`.
int32_t CachingAllocatorModel::grow_expandable(uint64_t size, bool small, uint8_t stream) {
  int32_t& seg = expandable_[stream][small ? 1 : 0];
  if (seg < 0) {
    seg = int32_t(segments_.size());
    segments_.push_back({small, stream, 0, -1});
    ++peaks_.segments;
  }
  const uint64_t page = small ? k_small_buffer : k_large_buffer;
  const auto pages_for = [page](uint64_t bytes) { return page * ((bytes + page - 1) / page); };
  Segment& s = segments_[size_t(seg)];
  const int32_t tail = s.last;
  if (tail >= 0 && !blocks_[size_t(tail)].allocated) {
    pool(small).erase(key(tail));
    Block& t = blocks_[size_t(tail)];
    const uint64_t grow = t.size >= size ? 0 : pages_for(size - t.size);
    t.size += grow;
    s.mapped += grow;
    reserved_ += grow;
    return tail;
  }
  const uint64_t grow = pages_for(size);
  const int32_t b = new_block({s.mapped, grow, seg, tail, -1, false, small, stream});
  if (tail >= 0) blocks_[size_t(tail)].next = b;
  Segment& s2 = segments_[size_t(seg)];
  s2.last = b;
  s2.mapped += grow;
  reserved_ += grow;
  return b;
}

void CachingAllocatorModel::cache(int32_t b) { pool(blocks_[size_t(b)].small).insert(key(b)); }

void CachingAllocatorModel::allocate(int32_t id, uint64_t bytes, int stream) {
  if (id < 0 || stream < 0 || stream >= k_max_streams) return;
  if (size_t(id) >= block_of_.size()) block_of_.resize(size_t(id) + 1, -1);
  if (block_of_[size_t(id)] >= 0) free(id);  // an id reused without its free: the old one goes
  const uint64_t size = round_size(bytes);
  const bool small = size <= k_small_size;
  const uint8_t on = uint8_t(stream);
  int32_t b = find_free(size, small, on);
  if (b < 0) b = options_.expandable_segments ? grow_expandable(size, small, on) : new_segment(allocation_size(size), small, on);
  if (should_split(blocks_[size_t(b)], size)) {
    const Block whole = blocks_[size_t(b)];
    const int32_t rest = new_block({whole.offset + size, whole.size - size, whole.segment, b, whole.next, false, small, on});
    if (whole.next >= 0) blocks_[size_t(whole.next)].prev = rest;
    Segment& s = segments_[size_t(whole.segment)];
    if (s.last == b) s.last = rest;
    Block& front = blocks_[size_t(b)];
    front.size = size;
    front.next = rest;
    cache(rest);
  }
  Block& got = blocks_[size_t(b)];
  got.allocated = true;
  allocated_ += got.size;
  block_of_[size_t(id)] = b;
  peaks_.allocated = std::max(peaks_.allocated, allocated_);
  peaks_.reserved = std::max(peaks_.reserved, reserved_);
}

void CachingAllocatorModel::reserve(size_t events) {
  // At most one block and one split remainder per allocation; ids below the event count.
  blocks_.reserve(events);
  block_of_.reserve(events);
}

int32_t CachingAllocatorModel::take(int32_t id) {
  if (id < 0 || size_t(id) >= block_of_.size() || block_of_[size_t(id)] < 0) return -1;
  const int32_t b = block_of_[size_t(id)];
  block_of_[size_t(id)] = -1;
  allocated_ -= blocks_[size_t(b)].size;
  return b;
}

void CachingAllocatorModel::free(int32_t id) {
  const int32_t b = take(id);
  if (b >= 0) free_block(b);
}

void CachingAllocatorModel::free_after_use(int32_t id) {
  // The block stays `allocated` (not mergeable, not in a pool) until its events complete.
  const int32_t b = take(id);
  if (b >= 0) pending_.push_back(b);
}

void CachingAllocatorModel::complete_pending(size_t keep) {
  const size_t waiting = pending_.size() - pending_done_;
  if (waiting <= keep) return;
  const size_t until = pending_.size() - keep;
  for (size_t i = pending_done_; i < until; ++i) free_block(pending_[i]);
  pending_done_ = until;
  if (pending_done_ == pending_.size()) {
    pending_.clear();
    pending_done_ = 0;
  }
}

// free_block: try_merge_blocks with the block before, then the block after, when they are cached,
// then into the pool.
void CachingAllocatorModel::free_block(int32_t b) {
  blocks_[size_t(b)].allocated = false;
  const int32_t prev = blocks_[size_t(b)].prev;
  if (prev >= 0 && !blocks_[size_t(prev)].allocated) {
    pool(blocks_[size_t(prev)].small).erase(key(prev));
    Block& p = blocks_[size_t(prev)];
    Block& me = blocks_[size_t(b)];
    me.offset = p.offset;
    me.size += p.size;
    me.prev = p.prev;
    if (p.prev >= 0) blocks_[size_t(p.prev)].next = b;
    spare_.push_back(prev);
  }
  const int32_t next = blocks_[size_t(b)].next;
  if (next >= 0 && !blocks_[size_t(next)].allocated) {
    pool(blocks_[size_t(next)].small).erase(key(next));
    Block& n = blocks_[size_t(next)];
    Block& me = blocks_[size_t(b)];
    me.size += n.size;
    me.next = n.next;
    if (n.next >= 0) blocks_[size_t(n.next)].prev = b;
    Segment& s = segments_[size_t(me.segment)];
    if (s.last == next) s.last = b;
    spare_.push_back(next);
  }
  cache(b);
}

AllocatorPeaks simulate_caching_allocator(std::span<const AllocatorEvent> events, AllocatorOptions options) {
  // One model per thread, reset for each sequence: its vectors keep their room, so a pipeline's
  // stages and a planner's candidates do not fault in fresh pages for each simulation.
  static thread_local CachingAllocatorModel model;
  model.reset(options);
  model.reserve(events.size());
  for (const AllocatorEvent& e : events) {
    switch (e.kind) {
      case AllocatorEvent::Kind::allocate: model.allocate(e.id, e.bytes, e.stream); break;
      case AllocatorEvent::Kind::free: model.free(e.id); break;
      case AllocatorEvent::Kind::free_after_use: model.free_after_use(e.id); break;
      case AllocatorEvent::Kind::complete_pending: model.complete_pending(size_t(e.bytes)); break;
    }
  }
  return model.peaks();
}

}  // namespace trainmem::detail
