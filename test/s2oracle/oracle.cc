// oracle.cc -- test-only cross-check of archer's src/geo/s2cell.c against libs2.
//
// Builds against Debian's libs2-dev (headers in /usr/include/s2, -ls2) and
// links ../../src/geo/s2cell.c compiled as C.  With a fixed seed it draws 200,000
// points uniform on the sphere plus special points (poles, equator, prime
// meridian, antimeridian, cube-face corners, face edges and centerlines, and
// points exactly on leaf-cell boundaries), derives cells at random levels
// from them, and compares every s2cell.h routine with its S2 counterpart.
//
// Output: one line per check group, then exactly one line
// "<passed> passed, <failed> failed" counting groups; exit status 1 if any
// group failed.
//
// Distance tolerances.  Ours must be a conservative bound of the true
// distance: min_angle <= S2 min + 1e-13 and >= S2 min - 1e-9; max_angle
// >= S2 max - 1e-13 and <= S2 max + 1e-9.  The reference is S2Cell's
// GetDistance / GetMaxDistance, with three caveats found while writing this
// (each checked against 40-digit mpmath; ours agreed to ~1e-14 every time):
//
//  * S2 returns S1ChordAngle, a squared chord length, and turning that into
//    an angle is ill-conditioned near pi: a few ulps in the squared chord
//    move the angle by up to ~1e-7 (S2 was off by ~3e-9 on real cases).  So
//    when the chord cannot pin the angle to 1e-13, the reference becomes an
//    exact equivalent: for min, pi - (largest angle from -p to a vertex),
//    valid when every vertex is within pi/2 of -p (the farthest point of a
//    convex cell inside that hemisphere is a vertex); for max,
//    pi - (S2's min distance from -p), which is small and so precise.  If
//    neither applies, the check is widened by the angle change 16 ulps of
//    relative chord error would cause (reported as "other chord slack").
//  * For level-0 cells S2Cell::GetDistance can be plainly wrong for targets
//    on the far side (face 5, p = (0.7071, 4e-10, -0.7071): GetDistance(-p)
//    is pi, so GetMaxDistance(p) is 0, though every vertex is ~pi/2 from p).
//    When S2Cell's answer contradicts its own vertex distances, the
//    reference is rebuilt from S2::UpdateMinDistance over the four edges
//    and S2Cell::Contains; the count is reported.
//  * Near pi/2 from an edge's great circle S2's EdgeDistance loses a few
//    1e-14 (seen: 5.6e-14 too small for face 2); that stays within 1e-13.

#include <float.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <s2/s1chord_angle.h>
#include <s2/s2cell.h>
#include <s2/s2cell_id.h>
#include <s2/s2coords.h>
#include <s2/s2edge_distances.h>
#include <s2/s2latlng.h>
#include <s2/s2latlng_rect.h>
#include <s2/s2metrics.h>

// The C header's names (S2Point, S2CellId) collide with libs2's classes, so
// it is wrapped in a namespace; the functions keep their C linkage.
namespace ar {
extern "C" {
#include "s2cell.h"
}
}  // namespace ar

namespace {

const int kNumRandomPoints = 200000;
const int kRectSamplePoints = 100;
const uint64_t kSeed = 0x61726368657253ULL;  // "archerS"

std::mt19937_64 rng(kSeed);

double Uniform(double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(rng);
}
int UniformInt(int lo, int hi) {  // inclusive
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}

struct Group {
  const char* name;
  long checks = 0;
  long fails = 0;
  double stat1 = 0;  // group-specific statistic reported on the line
  long stat2 = 0;    // group-specific counter reported on the line
  double over = -1;  // largest ours - reference (distance groups)
  double under = -1; // largest reference - ours (distance groups)

  void Dev(double ours, double ref) {
    over = std::max(over, ours - ref);
    under = std::max(under, ref - ours);
  }

  explicit Group(const char* n) : name(n) {}

  void Fail(const char* fmt, ...) __attribute__((format(printf, 2, 3))) {
    if (fails < 5) {
      va_list ap;
      va_start(ap, fmt);
      fprintf(stdout, "  FAIL %s: ", name);
      vfprintf(stdout, fmt, ap);
      fprintf(stdout, "\n");
      va_end(ap);
    }
    fails++;
  }
};

ar::S2Point ToAr(const S2Point& p) {
  ar::S2Point r;
  r.x = p.x();
  r.y = p.y();
  r.z = p.z();
  return r;
}

double MaxAbsDiff(const ar::S2Point& a, const S2Point& b) {
  return std::max(std::fabs(a.x - b.x()),
                  std::max(std::fabs(a.y - b.y()), std::fabs(a.z - b.z())));
}

S2Point RandomPoint() {
  // uniform on the sphere: z uniform, longitude uniform
  double z = Uniform(-1, 1);
  double t = Uniform(-M_PI, M_PI);
  double r = std::sqrt(std::max(0.0, 1 - z * z));
  return S2Point(r * std::cos(t), r * std::sin(t), z);
}

double ChordToAngle(double l2) {
  if (l2 <= 0) return 0;
  if (l2 >= 4) return M_PI;
  return 2 * std::asin(0.5 * std::sqrt(l2));
}

// Angle uncertainty of an S1ChordAngle due to 16 ulps of relative error in
// its squared length.
double ChordSlack(double l2) {
  double d = 16 * DBL_EPSILON * l2;
  double a = ChordToAngle(l2);
  return std::max(ChordToAngle(l2 + d) - a, a - ChordToAngle(l2 - d));
}

// lng interval helpers, degrees; lo > hi wraps
double LngLength(double lo, double hi) {
  return lo <= hi ? hi - lo : hi - lo + 360;
}
bool LngContains(double lo, double hi, double lng) {
  double off = std::fmod(lng - lo + 720, 360);
  return off <= LngLength(lo, hi);
}

std::string IdStr(uint64_t id) {
  char buf[64];
  snprintf(buf, sizeof buf, "%016llx(l%d)", (unsigned long long) id,
           S2CellId(id).level());
  return buf;
}

// Count a check; format the message (arguments included) only on failure.
#define CHECK(group, cond, ...)        \
  do {                                 \
    (group).checks++;                  \
    if (!(cond)) (group).Fail(__VA_ARGS__); \
  } while (0)

// ------------------------------------------------------------------------
// test inputs

std::vector<S2Point> points;
std::vector<bool> special;

void AddPoint(const S2Point& p, bool is_special) {
  points.push_back(p);
  special.push_back(is_special);
}

void BuildPoints() {
  for (int k = 0; k < kNumRandomPoints; k++) AddPoint(RandomPoint(), false);

  // poles, exact and via lat/lng
  AddPoint(S2Point(0, 0, 1), true);
  AddPoint(S2Point(0, 0, -1), true);
  for (double lng : {-180.0, -135.0, -90.0, -45.0, 0.0, 45.0, 90.0, 135.0, 180.0}) {
    AddPoint(S2LatLng::FromDegrees(90, lng).ToPoint(), true);
    AddPoint(S2LatLng::FromDegrees(-90, lng).ToPoint(), true);
  }
  // equator, prime meridian, antimeridian, face-boundary meridians
  for (int k = 0; k < 2000; k++) {
    double r = Uniform(-180, 180);
    double lat = Uniform(-90, 90);
    AddPoint(S2LatLng::FromDegrees(0, r).ToPoint(), true);
    AddPoint(S2LatLng::FromDegrees(lat, 0).ToPoint(), true);
    AddPoint(S2LatLng::FromDegrees(lat, 180).ToPoint(), true);
    AddPoint(S2LatLng::FromDegrees(lat, -180).ToPoint(), true);
    AddPoint(S2LatLng::FromDegrees(lat, 45.0 + 90.0 * UniformInt(-2, 1)).ToPoint(), true);
  }
  for (int lng = -180; lng <= 180; lng += 15) {
    for (int lat = -90; lat <= 90; lat += 15)
      AddPoint(S2LatLng::FromDegrees(lat, lng).ToPoint(), true);
  }
  // cube corners, exact components (unnormalized and normalized)
  for (int sx = -1; sx <= 1; sx += 2)
    for (int sy = -1; sy <= 1; sy += 2)
      for (int sz = -1; sz <= 1; sz += 2) {
        AddPoint(S2Point(sx, sy, sz), true);
        AddPoint(S2Point(sx, sy, sz).Normalize(), true);
      }
  // face edges, centerlines and exact leaf/cell boundaries on every face
  for (int face = 0; face < 6; face++) {
    for (int k = 0; k < 400; k++) {
      double t = Uniform(-1, 1);
      double e = (k & 1) ? 1.0 : -1.0;
      S2Point p1 = S2::FaceUVtoXYZ(face, e, t);
      S2Point p2 = S2::FaceUVtoXYZ(face, t, e);
      S2Point p3 = S2::FaceUVtoXYZ(face, 0, t);
      S2Point p4 = S2::FaceUVtoXYZ(face, t, 0);
      AddPoint(p1, true);
      AddPoint(p1.Normalize(), true);
      AddPoint(p2, true);
      AddPoint(p2.Normalize(), true);
      AddPoint(p3.Normalize(), true);
      AddPoint(p4.Normalize(), true);
    }
    for (int k = 0; k < 1000; k++) {
      int level = UniformInt(1, 30);
      int size = 1 << (30 - level);
      int i = UniformInt(0, (1 << level) - 1) * size;
      int j = UniformInt(0, (1 << 30) - 1);
      if (k & 1) j = UniformInt(0, (1 << level) - 1) * size;
      double u = S2::STtoUV(S2::IJtoSTMin(i));
      double v = S2::STtoUV(S2::IJtoSTMin(j));
      S2Point p = S2::FaceUVtoXYZ(face, u, v);
      AddPoint(p, true);
      AddPoint(p.Normalize(), true);
      // leaf centers, exactly
      AddPoint(S2::FaceSiTitoXYZ(face, 2 * i + 1, 2 * j + 1).Normalize(), true);
    }
  }
}

// ------------------------------------------------------------------------

Group g_latlng("latlng_conversions");
Group g_from_point("cellid_from_point");
Group g_to_point("cellid_to_point");
Group g_hier("cellid_hierarchy");
Group g_vertices("cell_vertices");
Group g_min("cell_min_angle");
Group g_inside("cell_min_angle_inside");
Group g_max("cell_max_angle");
Group g_rect("rect_bound_vs_s2");
Group g_rect_pts("rect_bound_contains_points");
Group g_radius("level_max_radius");

void CheckLatLng(const S2Point& p) {
  double lat, lng;
  ar::s2_latlng_from_point(ToAr(p), &lat, &lng);
  S2LatLng ll(p);
  double dlng = std::fabs(lng - ll.lng().degrees());
  if (dlng > 180) dlng = 360 - dlng;
  CHECK(g_latlng, std::fabs(lat - ll.lat().degrees()) <= 1e-12 && dlng <= 1e-12,
                 "latlng_from_point(%.17g,%.17g,%.17g) = %.17g,%.17g, S2 %.17g,%.17g",
                 p.x(), p.y(), p.z(), lat, lng, ll.lat().degrees(), ll.lng().degrees());
}

void CheckLatLngInputs() {
  std::vector<std::pair<double, double>> in;
  for (int k = 0; k < 20000; k++) in.emplace_back(Uniform(-90, 90), Uniform(-180, 180));
  for (double lat : {-90.0, -45.0, 0.0, 35.264389682754654, 45.0, 90.0})
    for (double lng : {-180.0, -135.0, -90.0, -45.0, 0.0, 45.0, 90.0, 135.0, 180.0})
      in.emplace_back(lat, lng);
  for (auto& ll : in) {
    ar::S2Point a = ar::s2_point_from_latlng(ll.first, ll.second);
    S2Point b = S2LatLng::FromDegrees(ll.first, ll.second).ToPoint();
    double d = MaxAbsDiff(a, b);
    CHECK(g_latlng, d <= 1e-15, "point_from_latlng(%.17g,%.17g) differs by %g",
                   ll.first, ll.second, d);
  }
}

void CheckHierarchy(S2CellId leaf, S2CellId cell) {
  uint64_t id = cell.id();
  int level = cell.level();
  Group& g = g_hier;

  CHECK(g, ar::s2_cellid_parent(leaf.id(), level) == id, "parent(%s, %d) = %016llx",
          IdStr(leaf.id()).c_str(), level,
          (unsigned long long) ar::s2_cellid_parent(leaf.id(), level));
  CHECK(g, ar::s2_cellid_level(id) == level, "level(%s) = %d", IdStr(id).c_str(),
          ar::s2_cellid_level(id));
  CHECK(g, ar::s2_cellid_face(id) == cell.face(), "face(%s) = %d", IdStr(id).c_str(),
          ar::s2_cellid_face(id));
  CHECK(g, ar::s2_cellid_is_valid(id), "is_valid(%s) false", IdStr(id).c_str());
  CHECK(g, ar::s2_cellid_range_min(id) == cell.range_min().id(), "range_min(%s)",
          IdStr(id).c_str());
  CHECK(g, ar::s2_cellid_range_max(id) == cell.range_max().id(), "range_max(%s)",
          IdStr(id).c_str());
  CHECK(g, ar::s2_cellid_contains(id, leaf.id()), "contains(%s, own leaf) false",
          IdStr(id).c_str());
  if (level > 0) {
    int l2 = UniformInt(0, level);
    CHECK(g, ar::s2_cellid_parent(id, l2) == cell.parent(l2).id(), "parent(%s, %d)",
            IdStr(id).c_str(), l2);
  }
  if (level < 30) {
    for (int pos = 0; pos < 4; pos++) {
      uint64_t c = ar::s2_cellid_child(id, pos);
      CHECK(g, c == cell.child(pos).id(), "child(%s, %d) = %016llx, S2 %016llx",
              IdStr(id).c_str(), pos, (unsigned long long) c,
              (unsigned long long) cell.child(pos).id());
      CHECK(g, ar::s2_cellid_contains(id, c) && !ar::s2_cellid_contains(c, id),
              "contains(%s, child %d)", IdStr(id).c_str(), pos);
    }
  }
  // containment against an unrelated cell and a neighbour
  S2CellId other = S2CellId(RandomPoint()).parent(UniformInt(0, 30));
  CHECK(g, ar::s2_cellid_contains(id, other.id()) == cell.contains(other),
          "contains(%s, %s)", IdStr(id).c_str(), IdStr(other.id()).c_str());
  CHECK(g, ar::s2_cellid_contains(other.id(), id) == other.contains(cell),
          "contains(%s, %s)", IdStr(other.id()).c_str(), IdStr(id).c_str());
  CHECK(g, ar::s2_cellid_common_level(id, other.id()) == cell.GetCommonAncestorLevel(other),
          "common_level(%s, %s)", IdStr(id).c_str(), IdStr(other.id()).c_str());
  CHECK(g, ar::s2_cellid_common_level(leaf.id(), id) == level, "common_level(leaf, %s)",
          IdStr(id).c_str());
  S2CellId next = cell.next_wrap();
  CHECK(g, ar::s2_cellid_common_level(id, next.id()) == cell.GetCommonAncestorLevel(next),
          "common_level(%s, next)", IdStr(id).c_str());
  CHECK(g, ar::s2_cellid_contains(id, next.id()) == cell.contains(next),
          "contains(%s, next)", IdStr(id).c_str());
}

void CheckIdValidity() {
  Group& g = g_hier;
  for (int face = 0; face < 6; face++)
    CHECK(g, ar::s2_cellid_from_face(face) == S2CellId::FromFace(face).id(),
            "from_face(%d)", face);
  std::vector<uint64_t> ids = {0, 1, ~0ULL, 1ULL << 63, 6ULL << 61, 7ULL << 61,
                               (6ULL << 61) | 1, (5ULL << 61) | 1, 2, 4, 8};
  for (int k = 0; k < 20000; k++) {
    uint64_t x = rng();
    ids.push_back(x);
    // valid-looking and invalid-looking trailing bits
    int shift = UniformInt(0, 63);
    ids.push_back((x & ~((2ULL << shift) - 1)) | (1ULL << shift));
  }
  for (uint64_t x : ids) {
    CHECK(g, ar::s2_cellid_is_valid(x) == S2CellId(x).is_valid(), "is_valid(%016llx)",
            (unsigned long long) x);
    if (S2CellId(x).is_valid())
      CHECK(g, ar::s2_cellid_level(x) == S2CellId(x).level() &&
                  ar::s2_cellid_face(x) == S2CellId(x).face(),
              "level/face(%016llx)", (unsigned long long) x);
  }
}

// A second S2 reference built from S2's edge primitives: zero if
// S2Cell::Contains(p), else the least S2::UpdateMinDistance over the edges.
S1ChordAngle EdgeRefMin(const S2Cell& cell, const S2Point& p) {
  if (cell.Contains(p)) return S1ChordAngle::Zero();
  S1ChordAngle d = S1ChordAngle::Infinity();
  for (int k = 0; k < 4; k++)
    S2::UpdateMinDistance(p, cell.GetVertex(k), cell.GetVertex((k + 1) & 3), &d);
  return d;
}

// Does an S2Cell distance contradict the distances to the cell's own
// vertices?  (Seen for level-0 cells and targets on the far side, e.g.
// face 5 and p = (0.7071, 4e-10, -0.7071): GetDistance(-p) = pi, so
// GetMaxDistance(p) = 0, although every vertex is about pi/2 from p.)
// (The margin allows for the chord's imprecision near pi.)
bool S2MinContradicted(const S2Cell& cell, const S2Point& p, S1ChordAngle s2min) {
  double a = s2min.ToAngle().radians();
  double margin = std::max(1e-9, ChordSlack(s2min.length2()));
  for (int k = 0; k < 4; k++)
    if (a > p.Angle(cell.GetVertex(k)) + margin) return true;
  return false;
}
bool S2MaxContradicted(const S2Cell& cell, const S2Point& p, S1ChordAngle s2max) {
  double a = s2max.ToAngle().radians();
  double margin = std::max(1e-9, ChordSlack(s2max.length2()));
  for (int k = 0; k < 4; k++)
    if (a < p.Angle(cell.GetVertex(k)) - margin) return true;
  return false;
}

// A reference distance and the tolerance S2's representation allows it.
struct Ref {
  double angle;
  double slack;
};

Ref FromChord(S1ChordAngle c) {
  return Ref{c.ToAngle().radians(), std::max(1e-13, ChordSlack(c.length2()))};
}

// the bound checks (see top of file)
bool MinOk(double ours, Ref r) {
  return ours >= 0 && ours <= r.angle + r.slack && ours >= r.angle - std::max(1e-9, r.slack);
}
bool MaxOk(double ours, Ref r) {
  return ours <= M_PI && ours >= r.angle - r.slack &&
         ours <= r.angle + std::max(1e-9, r.slack);
}

long s2cell_contradicted = 0;
int s2cell_contradicted_max_level = -1;

void NoteContradiction(const S2Cell& cell) {
  s2cell_contradicted++;
  s2cell_contradicted_max_level = std::max(s2cell_contradicted_max_level, cell.level());
}

// S2Cell::GetDistance, or the edge-primitive reference when S2Cell's
// answer contradicts the cell's own vertices
S1ChordAngle S2Min(const S2Cell& cell, const S2Point& p) {
  S1ChordAngle d = cell.GetDistance(p);
  if (S2MinContradicted(cell, p, d)) {
    NoteContradiction(cell);
    d = EdgeRefMin(cell, p);
  }
  return d;
}

// min and max distance of p to cell, ours vs S2
void CheckDistances(const S2Cell& s2cell, const S2Point& p_in, bool p_inside) {
  uint64_t id = s2cell.id().id();
  S2Point p = p_in.Normalize();  // S2Cell::GetDistance wants unit length
  ar::S2Point ap = ToAr(p);
  double ours = ar::s2_cell_min_angle(id, ap);
  double omax = ar::s2_cell_max_angle(id, ap);

  // min: S2Cell::GetDistance.  Near pi, where its chord is imprecise, use
  // pi - (largest angle from -p to a vertex) instead, which is exact when
  // all vertices lie within pi/2 of -p (the cell is then inside that
  // hemisphere, and the farthest point of a convex cell is a vertex).
  S1ChordAngle smin = S2Min(s2cell, p);
  Ref r = FromChord(smin);
  if (p_inside) {
    // S2 may report a distance of a few 1e-17 for points that belong to
    // the cell but round to just outside its uv bounds
    CHECK(g_inside, ours == 0 && r.angle <= 1e-15,
                   "min_angle(%s, own point %.17g,%.17g,%.17g) = %.17g (S2 %.17g)",
                   IdStr(id).c_str(), p.x(), p.y(), p.z(), ours, r.angle);
  }
  if (r.slack > 1e-13) {
    double far = 0;
    for (int k = 0; k < 4; k++) far = std::max(far, (-p).Angle(s2cell.GetVertex(k)));
    if (far <= M_PI_2) {
      r = Ref{M_PI - far, 1e-13};
      g_min.stat2++;
    } else {
      g_min.stat1 = std::max(g_min.stat1, r.slack);
    }
  }
  g_min.Dev(ours, r.angle);
  CHECK(g_min, MinOk(ours, r), "min_angle(%s, %.17g,%.17g,%.17g) = %.17g, S2 %.17g (diff %.3g)",
              IdStr(id).c_str(), p.x(), p.y(), p.z(), ours, r.angle, ours - r.angle);

  // max: S2Cell::GetMaxDistance.  Near pi use pi - (S2's min distance from
  // -p), which is small and so precise as a chord.
  S1ChordAngle smax = s2cell.GetMaxDistance(p);
  if (S2MaxContradicted(s2cell, p, smax)) {
    NoteContradiction(s2cell);
    smax = S1ChordAngle::Straight() - EdgeRefMin(s2cell, -p);
  }
  r = FromChord(smax);
  if (r.slack > 1e-13) {
    Ref anti = FromChord(S2Min(s2cell, -p));
    if (anti.slack <= 1e-13) {
      r = Ref{M_PI - anti.angle, 1e-13};
      g_max.stat2++;
    } else {
      g_max.stat1 = std::max(g_max.stat1, r.slack);
    }
  }
  g_max.Dev(omax, r.angle);
  CHECK(g_max, MaxOk(omax, r), "max_angle(%s, %.17g,%.17g,%.17g) = %.17g, S2 %.17g (diff %.3g)",
              IdStr(id).c_str(), p.x(), p.y(), p.z(), omax, r.angle, omax - r.angle);
}

void CheckRect(const S2Cell& s2cell, bool sample) {
  uint64_t id = s2cell.id().id();
  ar::S2LatLngRect r = ar::s2_cell_rect_bound(id);
  S2LatLngRect sr = s2cell.GetRectBound();
  const double tol = 1e-9;

  bool sane = r.lat_lo <= r.lat_hi && r.lat_lo >= -90 && r.lat_hi <= 90 &&
              r.lng_lo >= -180 && r.lng_lo <= 180 && r.lng_hi >= -180 && r.lng_hi <= 180;
  double slat_lo = sr.lat().lo() * (180 / M_PI);
  double slat_hi = sr.lat().hi() * (180 / M_PI);
  bool lat_ok = r.lat_lo <= slat_lo + tol && r.lat_hi >= slat_hi - tol;
  bool lng_ok;
  double our_len = LngLength(r.lng_lo, r.lng_hi);
  if (sr.lng().is_full()) {
    lng_ok = our_len >= 360 - 2 * tol;
  } else {
    double slo = sr.lng().lo() * (180 / M_PI);
    double shi = sr.lng().hi() * (180 / M_PI);
    double slen = LngLength(slo, shi) - 2 * tol;
    double off = std::fmod(slo + tol - r.lng_lo + 720, 360);
    lng_ok = slen < 0 || (off <= our_len && off + slen <= our_len);
    // how much wider than S2's is ours (info)
    g_rect.stat1 = std::max(g_rect.stat1, our_len - LngLength(slo, shi));
  }
  g_rect.stat1 = std::max(g_rect.stat1, std::max(slat_lo - r.lat_lo, r.lat_hi - slat_hi));
  CHECK(g_rect, sane && lat_ok && lng_ok,
               "rect(%s) = lat [%.17g, %.17g] lng [%.17g, %.17g]; S2 lat [%.17g, %.17g] "
               "lng [%.17g, %.17g]%s",
               IdStr(id).c_str(), r.lat_lo, r.lat_hi, r.lng_lo, r.lng_hi, slat_lo, slat_hi,
               sr.lng().lo() * (180 / M_PI), sr.lng().hi() * (180 / M_PI),
               sr.lng().is_full() ? " (full)" : "");

  // radius bound: center to vertices
  int level = s2cell.level();
  double radius = ar::s2_level_max_radius(level);
  S2Point center = s2cell.id().ToPoint();
  for (int k = 0; k < 4; k++) {
    double a = center.Angle(s2cell.GetVertex(k));
    g_radius.stat1 = std::max(g_radius.stat1, a / radius);
    CHECK(g_radius, a <= radius, "radius(%d) = %.17g < center-vertex %.17g in %s", level,
                   radius, a, IdStr(id).c_str());
  }
  if (!sample) return;

  // points inside the cell: vertices, edge points, interior
  R2Rect uv = s2cell.GetBoundUV();
  int face = s2cell.face();
  for (int k = 0; k < kRectSamplePoints; k++) {
    double u, v;
    if (k < 4) {
      R2Point c = uv.GetVertex(k);
      u = c.x();
      v = c.y();
    } else {
      u = Uniform(uv.x().lo(), uv.x().hi());
      v = Uniform(uv.y().lo(), uv.y().hi());
      if (k < 8) u = (k & 1) ? uv.x().hi() : uv.x().lo();
      else if (k < 12) v = (k & 1) ? uv.y().hi() : uv.y().lo();
    }
    S2Point p = S2::FaceUVtoXYZ(face, u, v).Normalize();
    S2LatLng ll(p);
    double lat = ll.lat().degrees(), lng = ll.lng().degrees();
    CHECK(g_rect_pts, lat >= r.lat_lo && lat <= r.lat_hi && LngContains(r.lng_lo, r.lng_hi, lng),
                     "rect(%s) = lat [%.17g, %.17g] lng [%.17g, %.17g] misses %.17g,%.17g",
                     IdStr(id).c_str(), r.lat_lo, r.lat_hi, r.lng_lo, r.lng_hi, lat, lng);
    double a = center.Angle(p);
    CHECK(g_radius, a <= radius, "radius(%d) = %.17g < center-point %.17g in %s", level,
                   radius, a, IdStr(id).c_str());
    // a point of the cell: min distance 0 (ours; S2 may say tiny > 0 for
    // points that round just outside), max distance >= 0
    double ours = ar::s2_cell_min_angle(id, ToAr(p));
    CHECK(g_inside, ours == 0, "min_angle(%s, interior %.17g,%.17g,%.17g) = %.17g",
                   IdStr(id).c_str(), p.x(), p.y(), p.z(), ours);
  }
}

// everything that depends only on the cell
void CheckCell(S2CellId leaf, S2CellId cell, bool sample) {
  S2Cell s2cell(cell);
  uint64_t id = cell.id();

  CheckHierarchy(leaf, cell);

  ar::S2Point c = ar::s2_cellid_to_point(id);
  double d = MaxAbsDiff(c, cell.ToPoint());
  CHECK(g_to_point, d <= 1e-15, "to_point(%s) differs by %g", IdStr(id).c_str(), d);

  ar::S2Point v[4];
  ar::s2_cell_vertices(id, v);
  for (int k = 0; k < 4; k++) {
    d = MaxAbsDiff(v[k], s2cell.GetVertex(k));
    CHECK(g_vertices, d <= 1e-15, "vertex %d of %s differs by %g", k, IdStr(id).c_str(), d);
  }
  CheckRect(s2cell, sample);
}

S2Point Perturb(const S2Point& p) {
  double r = std::pow(10.0, -Uniform(0, 9));
  return (p + r * RandomPoint()).Normalize();
}

void PrintGroup(const Group& g, const char* extra) {
  printf("%s %-28s %9ld checks, %ld failed%s\n", g.fails ? "FAIL" : "ok  ", g.name,
         g.checks, g.fails, extra);
}

}  // namespace

int main() {
  BuildPoints();
  CheckLatLngInputs();
  CheckIdValidity();

  // fixed cells: all faces and all level-1 and level-2 cells
  std::vector<S2CellId> fixed_cells;
  for (int face = 0; face < 6; face++) {
    S2CellId f = S2CellId::FromFace(face);
    fixed_cells.push_back(f);
    for (S2CellId c = f.child_begin(1); c != f.child_end(1); c = c.next())
      fixed_cells.push_back(c);
    for (S2CellId c = f.child_begin(2); c != f.child_end(2); c = c.next())
      fixed_cells.push_back(c);
  }
  for (S2CellId c : fixed_cells) CheckCell(c.range_min(), c, true);

  for (size_t n = 0; n < points.size(); n++) {
    const S2Point& p = points[n];
    S2CellId leaf(p);
    uint64_t ours = ar::s2_cellid_from_point(ToAr(p));
    CHECK(g_from_point, ours == leaf.id(),
                       "from_point(%.17g,%.17g,%.17g) = %016llx, S2 %016llx", p.x(), p.y(),
                       p.z(), (unsigned long long) ours, (unsigned long long) leaf.id());
    CheckLatLng(p);

    // levels: one random level; special points also get levels 0 and 30
    std::vector<int> levels = {UniformInt(0, 30)};
    if (special[n]) {
      levels.push_back(0);
      levels.push_back(30);
    }
    for (size_t li = 0; li < levels.size(); li++) {
      int level = levels[li];
      bool sample = (n % 8 == 0) && li == 0;
      // (a) the cell containing p
      S2CellId a = leaf.parent(level);
      CheckCell(leaf, a, sample);
      CheckDistances(S2Cell(a), p, true);
      CheckDistances(S2Cell(a), -p, false);
      // (b) a cell containing a point near p, at another random level
      S2CellId near_leaf(Perturb(p));
      S2CellId b = near_leaf.parent(UniformInt(0, 30));
      CheckCell(near_leaf, b, false);
      CheckDistances(S2Cell(b), p, false);
      CheckDistances(S2Cell(b), -p, false);
      // (c) an unrelated cell
      S2CellId far_leaf(RandomPoint());
      S2CellId c = far_leaf.parent(UniformInt(0, 30));
      CheckCell(far_leaf, c, false);
      CheckDistances(S2Cell(c), p, false);
    }
    if (n < 2000) {
      for (S2CellId c : fixed_cells) CheckDistances(S2Cell(c), p, c.contains(leaf));
    }
  }

  // the radius bound should also cover S2's own diagonal metric
  for (int level = 0; level <= 30; level++) {
    CHECK(g_radius, ar::s2_level_max_radius(level) >= S2::kMaxDiag.GetValue(level),
                   "radius(%d) below kMaxDiag", level);
  }

  char buf[160];
  std::vector<Group*> groups = {&g_latlng, &g_from_point, &g_to_point, &g_hier,
                                &g_vertices, &g_min, &g_inside, &g_max,
                                &g_rect, &g_rect_pts, &g_radius};
  int passed = 0, failed = 0;
  for (Group* g : groups) {
    buf[0] = 0;
    if (g == &g_min || g == &g_max)
      snprintf(buf, sizeof buf,
               " (ours-ref in [%.2g, %.2g]; near pi: %ld exact refs, other chord slack"
               " <= %.2g; S2Cell contradicted by own vertices: %ld, levels <= %d)",
               -g->under, g->over, g->stat2, g->stat1, s2cell_contradicted,
               s2cell_contradicted_max_level);
    else if (g == &g_rect)
      snprintf(buf, sizeof buf, " (max excess over S2 %.2g deg)", g->stat1);
    else if (g == &g_radius)
      snprintf(buf, sizeof buf, " (max center-vertex / bound %.3f)", g->stat1);
    PrintGroup(*g, buf);
    if (g->fails || g->checks == 0)
      failed++;
    else
      passed++;
  }
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
