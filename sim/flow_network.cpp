#include "sim/flow_network.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace fabricsim::sim {

FlowNetwork::FlowNetwork(Simulation& simulation, std::vector<LinkCapacity> links)
    : simulation_(simulation), links_(links.size()), link_bytes_(links.size(), 0.0) {
  for (size_t i = 0; i < links.size(); ++i) {
    const double usable = links[i].bandwidth.bytes_per_s() * links[i].efficiency;
    if (!(usable > 0)) throw std::invalid_argument("FlowNetwork: link capacity must be positive");
    links_[i].usable = usable;
  }
}

std::vector<FlowNetwork::FlowRate> FlowNetwork::active_flow_rates() const {
  std::vector<FlowRate> out;
  for (const Flow& f : flows_) {
    if (!f.active) continue;
    FlowRate r{{}, f.rate, f.weight, f.max_rate};
    for (const Incidence& inc : f.links)
      r.links.push_back(LinkShare{inc.link, inc.fraction});
    out.push_back(std::move(r));
  }
  return out;
}

uint32_t FlowNetwork::allocate_flow() {
  if (!free_flows_.empty()) {
    const uint32_t index = free_flows_.back();
    free_flows_.pop_back();
    return index;
  }
  flows_.emplace_back();
  return static_cast<uint32_t>(flows_.size() - 1);
}

void FlowNetwork::start_flow(const Route& route, FlowRequest request) {
  ++stats_.flows_started;
  const double bytes = std::max(0.0, request.bytes.count());
  const double max_rate =
      request.max_rate ? request.max_rate->bytes_per_s() : std::numeric_limits<double>::infinity();
  const bool capped = std::isfinite(max_rate);
  if (bytes == 0 || (route.links.empty() && !capped)) {
    // Nothing to share: the data is there after the route latency.
    ++stats_.flows_completed;
    simulation_.schedule_in(route.latency, std::move(request.on_complete));
    return;
  }
  const uint32_t index = allocate_flow();
  Flow& f = flows_[index];
  f.links.clear();
  for (const LinkShare& share : route.links) {
    if (share.link.index() >= links_.size())
      throw std::out_of_range("FlowNetwork: unknown link id");
    Link& link = links_[share.link];
    f.links.push_back(
        Incidence{share.link, share.fraction, static_cast<uint32_t>(link.members.size())});
    link.members.push_back(Member{index, static_cast<uint32_t>(f.links.size() - 1)});
    mark_dirty(share.link);
  }
  f.remaining = bytes;
  f.rate = 0;
  f.weight = request.weight > 0 ? request.weight : 1.0;
  f.max_rate = max_rate;
  f.last_update = simulation_.now().ps();
  f.latency = route.latency;
  f.on_complete = std::move(request.on_complete);
  f.active = true;
  ++f.version;
  ++active_count_;
  stats_.peak_active_flows = std::max<uint64_t>(stats_.peak_active_flows, active_count_);
  if (f.links.empty()) {
    // A purely rate-capped transfer (e.g. a local copy): nothing to share, start it now.
    f.new_rate = f.max_rate;
    component_flows_.assign(1, index);
    apply_new_rates();
    schedule_next_completion();
    return;
  }
  request_solve();
}

void FlowNetwork::set_link_capacity(LinkId link, const LinkCapacity& capacity) {
  if (link.index() >= links_.size()) throw std::invalid_argument("FlowNetwork: unknown link id");
  const double usable = capacity.bandwidth.bytes_per_s() * capacity.efficiency;
  if (!(usable > 0)) throw std::invalid_argument("FlowNetwork: link capacity must be positive");
  if (usable == links_[link].usable) return;
  links_[link].usable = usable;
  if (links_[link].members.empty()) return;  // the next flow to cross it sees the new capacity
  mark_dirty(link);
  request_solve();
}

void FlowNetwork::mark_dirty(LinkId link) {
  if (links_[link].dirty) return;
  links_[link].dirty = true;
  dirty_links_.push_back(link);
}

void FlowNetwork::request_solve() {
  if (solve_pending_) return;
  solve_pending_ = true;
  simulation_.schedule_in(Time::zero(), [this] {
    solve_pending_ = false;
    solve();
    schedule_next_completion();
  });
}

void FlowNetwork::solve() {
  if (dirty_links_.empty()) return;
  ++stats_.rate_solves;
  collect_component();
  stats_.solved_flows += component_flows_.size();
  progressive_filling();
  apply_new_rates();
  if (observer_) {
    for (LinkId l : component_links_) {
      double rate = 0;
      for (const Member& m : links_[l].members) {
        const Flow& f = flows_[m.flow];
        rate += f.rate * f.links[m.incidence].fraction;
      }
      observer_(l, simulation_.now(), rate);
    }
  }
}

void FlowNetwork::collect_component() {
  // Links and flows connected to a dirty link: only their rates can have changed.
  ++epoch_;
  component_links_.clear();
  component_flows_.clear();
  for (LinkId l : dirty_links_) {
    links_[l].dirty = false;
    if (links_[l].mark == epoch_) continue;
    links_[l].mark = epoch_;
    component_links_.push_back(l);
  }
  dirty_links_.clear();
  for (size_t i = 0; i < component_links_.size(); ++i) {
    const Link& link = links_[component_links_[i]];
    for (const Member& m : link.members) {
      Flow& f = flows_[m.flow];
      if (f.mark == epoch_) continue;
      f.mark = epoch_;
      component_flows_.push_back(m.flow);
      for (const Incidence& inc : f.links) {
        Link& other = links_[inc.link];
        if (other.mark == epoch_) continue;
        other.mark = epoch_;
        component_links_.push_back(inc.link);
      }
    }
  }
}

void FlowNetwork::progressive_filling() {
  // Progressive filling: repeatedly take the most constrained link (least capacity per unit of
  // weight left), give each of its unfixed flows its weighted share, and remove those flows. A
  // link's level never decreases as flows are fixed elsewhere, so heap keys are lower bounds and
  // a popped link whose level has grown is simply pushed back.
  heap_.clear();
  for (LinkId l : component_links_) {
    Link& link = links_[l];
    link.remaining = link.usable;
    link.denom = 0;
    link.unfixed = static_cast<uint32_t>(link.members.size());
    for (const Member& m : link.members) {
      const Flow& f = flows_[m.flow];
      link.denom += f.weight * f.links[m.incidence].fraction;
    }
    if (link.unfixed > 0)
      heap_.push_back(Level{fair_level(link.remaining, link.denom), l.value(), false});
  }
  for (uint32_t fi : component_flows_) {
    Flow& f = flows_[fi];
    f.fixed = false;
    f.new_rate = 0;
    if (std::isfinite(f.max_rate)) heap_.push_back(Level{f.max_rate / f.weight, fi, true});
  }
  std::make_heap(heap_.begin(), heap_.end(), level_greater);

  auto fix = [this](uint32_t fi, double rate) {
    Flow& f = flows_[fi];
    f.fixed = true;
    f.new_rate = rate;
    for (const Incidence& inc : f.links) {
      Link& link = links_[inc.link];
      link.remaining = std::max(0.0, link.remaining - rate * inc.fraction);
      link.denom -= f.weight * inc.fraction;
      --link.unfixed;
    }
  };

  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), level_greater);
    const Level top = heap_.back();
    heap_.pop_back();
    if (top.is_cap) {
      if (!flows_[top.id].fixed) fix(top.id, flows_[top.id].max_rate);
      continue;
    }
    Link& link = links_[LinkId(top.id)];
    if (link.unfixed == 0) continue;
    const double level = fair_level(link.remaining, std::max(link.denom, 1e-300));
    if (level > top.level) {
      heap_.push_back(Level{level, top.id, false});
      std::push_heap(heap_.begin(), heap_.end(), level_greater);
      continue;
    }
    for (const Member& m : link.members) {
      Flow& f = flows_[m.flow];
      if (!f.fixed) fix(m.flow, f.weight * level);
    }
  }
}

void FlowNetwork::advance(Flow& f, int64_t now) {
  if (now <= f.last_update) return;
  const double moved =
      std::min(f.remaining, f.rate * static_cast<double>(now - f.last_update) * 1e-12);
  f.remaining -= moved;
  f.last_update = now;
  for (const Incidence& inc : f.links)
    link_bytes_[inc.link] += moved * inc.fraction;
}

void FlowNetwork::apply_new_rates() {
  const int64_t now = simulation_.now().ps();
  for (uint32_t fi : component_flows_) {
    Flow& f = flows_[fi];
    if (f.new_rate == f.rate) continue;  // unchanged: keep its completion time exactly
    advance(f, now);
    f.rate = f.new_rate;
    ++f.version;
    if (f.rate <= 0) continue;
    // A rate too small to finish within the time range never completes (saturates).
    const Time finish = saturating_add(
        simulation_.now(), transfer_time(Bytes::of(f.remaining), Bandwidth::bytes_per_s(f.rate)));
    completions_.push_back(Completion{finish.ps(), fi, f.version});
    std::push_heap(completions_.begin(), completions_.end(), completion_later);
  }
  // Drop stale completion entries once they dominate the heap.
  if (completions_.size() > 4096 && completions_.size() > 4 * active_count_) {
    std::erase_if(completions_, [this](const Completion& c) {
      const Flow& f = flows_[c.flow];
      return !f.active || f.version != c.version;
    });
    std::make_heap(completions_.begin(), completions_.end(), completion_later);
  }
}

void FlowNetwork::schedule_next_completion() {
  while (!completions_.empty()) {
    const Completion& top = completions_.front();
    const Flow& f = flows_[top.flow];
    if (f.active && f.version == top.version) break;
    std::pop_heap(completions_.begin(), completions_.end(), completion_later);
    completions_.pop_back();
  }
  if (completions_.empty()) {
    if (completion_event_.valid()) simulation_.cancel(completion_event_);
    completion_event_time_ = -1;
    return;
  }
  const int64_t next = completions_.front().time;
  if (next == completion_event_time_ && simulation_.is_pending(completion_event_)) return;
  if (completion_event_.valid()) simulation_.cancel(completion_event_);
  completion_event_time_ = next;
  completion_event_ =
      simulation_.schedule_at(Time::from_ps(next), [this] { on_completion_event(); });
}

void FlowNetwork::finish_flow(uint32_t index, std::vector<uint32_t>& done) {
  Flow& f = flows_[index];
  advance(f, simulation_.now().ps());
  // Account whatever rounding left over, so link byte counts add up to the flow's bytes.
  for (const Incidence& inc : f.links)
    link_bytes_[inc.link] += f.remaining * inc.fraction;
  f.remaining = 0;
  for (const Incidence& inc : f.links) {
    Link& link = links_[inc.link];
    const Member last = link.members.back();
    link.members[inc.position] = last;
    flows_[last.flow].links[last.incidence].position = inc.position;
    link.members.pop_back();
    mark_dirty(inc.link);
  }
  f.active = false;
  f.rate = 0;
  ++f.version;
  --active_count_;
  ++stats_.flows_completed;
  done.push_back(index);
}

void FlowNetwork::on_completion_event() {
  completion_event_time_ = -1;
  const int64_t now = simulation_.now().ps();
  std::vector<uint32_t> done;
  while (!completions_.empty() && completions_.front().time <= now) {
    const Completion top = completions_.front();
    std::pop_heap(completions_.begin(), completions_.end(), completion_later);
    completions_.pop_back();
    const Flow& f = flows_[top.flow];
    if (!f.active || f.version != top.version) continue;
    finish_flow(top.flow, done);
  }
  // Release the slots before running callbacks: callbacks may start new flows.
  std::vector<std::pair<Time, std::function<void()>>> callbacks;
  callbacks.reserve(done.size());
  for (uint32_t index : done) {
    Flow& f = flows_[index];
    callbacks.emplace_back(f.latency, std::move(f.on_complete));
    f.on_complete = nullptr;
    free_flows_.push_back(index);
  }
  for (auto& [latency, callback] : callbacks) {
    if (latency == Time::zero()) {
      if (callback) callback();
    } else {
      simulation_.schedule_in(latency, std::move(callback));
    }
  }
  if (!dirty_links_.empty()) request_solve();
  schedule_next_completion();
}

}  // namespace fabricsim::sim
