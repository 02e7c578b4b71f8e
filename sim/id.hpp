#pragma once
// Typed indices: a node, a link or a rank is not an integer of any other kind, so passing a
// rank where a node is expected fails to compile. Ids index dense vectors (IdVector); the
// integer is reached only through index()/value(), where code crosses into plain arithmetic.

#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <vector>

namespace fabricsim::sim {

template <class Tag>
class Id {
 public:
  using Rep = uint32_t;
  /// An id that names nothing (the default).
  static constexpr Id none() { return Id(); }

  constexpr Id() = default;
  constexpr explicit Id(Rep value) : value_(value) {}
  /// From a container position (the id of the element at `i`).
  static constexpr Id at(size_t i) { return Id(static_cast<Rep>(i)); }

  constexpr Rep value() const { return value_; }
  constexpr size_t index() const { return value_; }
  constexpr bool valid() const { return value_ != kNone; }
  constexpr Id next() const { return Id(value_ + 1); }

  friend constexpr auto operator<=>(Id, Id) = default;

 private:
  static constexpr Rep kNone = std::numeric_limits<Rep>::max();
  Rep value_ = kNone;
};

/// A vector whose elements are named by `IdT` (and, for code that counts, by position).
template <class IdT, class T>
class IdVector : public std::vector<T> {
 public:
  using std::vector<T>::vector;
  using std::vector<T>::operator[];
  T& operator[](IdT id) { return std::vector<T>::operator[](id.index()); }
  const T& operator[](IdT id) const { return std::vector<T>::operator[](id.index()); }
  using std::vector<T>::at;
  T& at(IdT id) { return std::vector<T>::at(id.index()); }
  const T& at(IdT id) const { return std::vector<T>::at(id.index()); }
};

/// The integers of a list of ids (for output and for tests that spell ids as numbers).
template <class IdT>
std::vector<typename IdT::Rep> id_values(const std::vector<IdT>& ids) {
  std::vector<typename IdT::Rep> out;
  out.reserve(ids.size());
  for (IdT id : ids)
    out.push_back(id.value());
  return out;
}

/// Ids from their integers.
template <class IdT>
std::vector<IdT> ids_of(const std::vector<typename IdT::Rep>& values) {
  std::vector<IdT> out;
  out.reserve(values.size());
  for (auto v : values)
    out.push_back(IdT(v));
  return out;
}
template <class IdT>
std::vector<IdT> ids_of(std::initializer_list<typename IdT::Rep> values) {
  return ids_of<IdT>(std::vector<typename IdT::Rep>(values));
}

}  // namespace fabricsim::sim

template <class Tag>
struct std::hash<fabricsim::sim::Id<Tag>> {
  size_t operator()(fabricsim::sim::Id<Tag> id) const noexcept {
    return std::hash<uint32_t>()(id.value());
  }
};
