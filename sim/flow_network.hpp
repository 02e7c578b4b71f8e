#pragma once
// Flow-level network: every active flow gets a rate from weighted max-min fair sharing of the
// directed links it crosses (progressive filling, SimGrid-style). Rates are re-solved only for the
// connected component of links and flows touched since the last solve, once per simulated instant,
// so a burst of flows starting (or finishing) together costs one solve.

#include <cstdint>
#include <functional>
#include <vector>

#include "sim/network.hpp"

namespace fabricsim::sim {

class FlowNetwork final : public Network {
 public:
  FlowNetwork(Simulation& simulation, std::vector<LinkCapacity> links);
  FlowNetwork(const FlowNetwork&) = delete;
  FlowNetwork& operator=(const FlowNetwork&) = delete;

  void start_flow(const Route& route, FlowRequest request) override;
  size_t active_flows() const override { return active_count_; }
  const IdVector<LinkId, double>& link_bytes() const override { return link_bytes_; }
  const NetworkStats& stats() const override { return stats_; }

  /// Current rate of every active flow (diagnostics and tests), in start order of their slots.
  struct FlowRate {
    std::vector<LinkShare> links;
    double rate;  ///< bytes per second
    double weight;
    double max_rate;
  };
  std::vector<FlowRate> active_flow_rates() const;
  /// Changes a link's capacity from now on (a degraded or repaired link): flows crossing it move
  /// at their old rates up to now and are re-solved at this instant. Throws std::invalid_argument
  /// for an unknown link or a capacity that is not positive.
  void set_link_capacity(LinkId link, const LinkCapacity& capacity);
  /// Usable capacity (bandwidth x efficiency) of a link, bytes per second.
  double usable_capacity(LinkId link) const { return links_[link].usable; }

  /// Called after every re-solve with the new total rate (bytes per second) of each link whose
  /// flows were re-solved: a link's rate as a step function of time (traces).
  using LinkRateObserver = std::function<void(LinkId, Time, double)>;
  void set_link_rate_observer(LinkRateObserver observer) { observer_ = std::move(observer); }

 private:
  struct Incidence {
    LinkId link;
    double fraction;
    uint32_t position;  ///< index of this flow in the link's member list
  };
  struct Flow {
    std::vector<Incidence> links;
    double remaining = 0;  ///< bytes still to send as of `last_update`
    double rate = 0;       ///< bytes per second
    double weight = 1;
    double max_rate = 0;
    int64_t last_update = 0;
    Time latency;
    std::function<void()> on_complete;
    uint32_t version = 0;
    uint32_t mark = 0;
    double new_rate = 0;
    bool fixed = false;
    bool active = false;
  };
  struct Member {
    uint32_t flow;
    uint32_t incidence;
  };
  struct Link {
    double usable = 0;  ///< bandwidth x efficiency, bytes per second
    std::vector<Member> members;
    uint32_t mark = 0;
    bool dirty = false;
    // Progressive-filling scratch.
    double remaining = 0;  ///< capacity not yet given to fixed flows
    double denom = 0;      ///< sum of weight x fraction over the link's unfixed flows
    uint32_t unfixed = 0;
  };
  LinkRateObserver observer_;
  struct Completion {
    int64_t time;
    uint32_t flow;
    uint32_t version;
  };
  struct Level {
    double level;
    uint32_t id;
    bool is_cap;  ///< a flow's own rate cap rather than a link
  };
  static bool completion_later(const Completion& a, const Completion& b) {
    return a.time != b.time ? a.time > b.time : a.flow > b.flow;
  }
  static bool level_greater(const Level& a, const Level& b) {
    if (a.level != b.level) return a.level > b.level;
    if (a.is_cap != b.is_cap) return a.is_cap;  // links first at equal levels
    return a.id > b.id;
  }

  uint32_t allocate_flow();
  void mark_dirty(LinkId link);
  void request_solve();
  void solve();
  void collect_component();
  void progressive_filling();
  void apply_new_rates();
  void advance(Flow& flow, int64_t now);
  void on_completion_event();
  void schedule_next_completion();
  void finish_flow(uint32_t index, std::vector<uint32_t>& done);

  Simulation& simulation_;
  IdVector<LinkId, Link> links_;
  IdVector<LinkId, double> link_bytes_;
  std::vector<Flow> flows_;
  std::vector<uint32_t> free_flows_;
  size_t active_count_ = 0;
  std::vector<LinkId> dirty_links_;
  std::vector<Completion> completions_;
  EventId completion_event_;
  int64_t completion_event_time_ = -1;
  bool solve_pending_ = false;
  uint32_t epoch_ = 0;
  NetworkStats stats_;
  // Scratch reused across solves to avoid allocation.
  std::vector<LinkId> component_links_;
  std::vector<uint32_t> component_flows_;
  std::vector<Level> heap_;
};

}  // namespace fabricsim::sim
