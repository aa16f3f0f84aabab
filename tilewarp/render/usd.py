"""``UsdRenderer``: simulation frames as time-sampled USD prims, with Warp's ``warp.render.UsdRenderer`` API.

Every ``render_*`` call writes its prim's attributes at the current frame's time code, ``time * fps``
(so the stage plays back at ``fps`` in usdview, Omniverse or Blender). Shapes live under ``/root``,
whose uniform scale op carries ``scaling``; bodies (``register_body``) are child transforms of it.
"""
from __future__ import annotations

import os

import numpy as np

from .utils import AXES, Color, arrow_cap, axis_index, colors_array, quats_between, segments, to_numpy

try:
    from pxr import Gf, Sdf, Tf, Usd, UsdGeom, UsdLux, Vt
except ImportError:  # usd-core is an optional extra: constructing a UsdRenderer says how to get it
    Usd = None

MISSING_USD = ('tilewarp.render.UsdRenderer needs the USD Python bindings (module "pxr"): '
               'pip install "tilewarp[usd]"  (or: pip install usd-core)')
TEMPLATES = "/root/_template_shapes"


def _vec3f(a) -> Vt.Vec3fArray:
    return Vt.Vec3fArray.FromNumpy(np.ascontiguousarray(to_numpy(a, np.float32, 3)))


def _quatf(rot) -> Gf.Quatf:
    x, y, z, w = (float(c) for c in to_numpy(rot, np.float64).ravel())
    return Gf.Quatf(w, x, y, z)


def _extent(points: np.ndarray, pad: float = 0.0) -> Vt.Vec3fArray:
    if len(points) == 0:
        return Vt.Vec3fArray(2)
    return _vec3f(np.stack([points.min(axis=0) - pad, points.max(axis=0) + pad]))


def _set_visibility(prim, visible: bool, when):
    UsdGeom.Imageable(prim).GetVisibilityAttr().Set(
        UsdGeom.Tokens.inherited if visible else UsdGeom.Tokens.invisible, when)


def _open_stage(path: str) -> Usd.Stage:
    """A new, empty stage at ``path``; a layer of that path already open in this process is emptied."""
    layer = Sdf.Layer.Find(path)
    if layer is None:
        return Usd.Stage.CreateNew(path)
    layer.Clear()
    return Usd.Stage.Open(layer)


class UsdRenderer:
    """Writes simulation frames to a USD stage, as NVIDIA Warp's ``warp.render.UsdRenderer`` does.

    Args:
        stage: a file path (a new stage is created there; ``save()`` writes it) or a ``pxr.Usd.Stage``.
        up_axis: the stage's up axis, ``"X"``, ``"Y"`` or ``"Z"``.
        fps: frames per second: ``begin_frame(time)`` writes at time code ``time * fps``, and the stage's
            ``timeCodesPerSecond``/``framesPerSecond`` are set to it, so playback runs in real time.
        scaling: uniform scale applied to everything (the scale op of ``/root``).
    """

    def __init__(self, stage, up_axis: str = "Y", fps: int = 60, scaling: float = 1.0):
        if Usd is None:
            raise ImportError(MISSING_USD)
        self.stage = _open_stage(os.fspath(stage)) if isinstance(stage, (str, os.PathLike)) else stage
        self.up_axis = AXES[axis_index(up_axis)]
        self.fps = fps
        self.scaling = scaling
        self.time = 0.0  # seconds, as given to begin_frame
        self._code = 0.0  # the USD time code of the current frame
        self._range = None  # (first, last) time codes written
        self._written = set()  # prims whose one-off data (topology, prototypes, references) exists
        self._instance_counts = {}  # point instancer path -> length of its protoIndices

        UsdGeom.SetStageUpAxis(self.stage, self.up_axis)
        self.stage.SetTimeCodesPerSecond(fps)
        self.stage.SetFramesPerSecond(fps)
        self.root = UsdGeom.Xform.Define(self.stage, "/root")
        self.stage.SetDefaultPrim(self.root.GetPrim())
        self.root.ClearXformOpOrder()
        self.root.AddScaleOp().Set(Gf.Vec3f(float(scaling)))
        self._add_lights()

    def _add_lights(self):
        # without lights, Omniverse and Blender show the scene black; usdview has its own camera light
        dome = UsdLux.DomeLight.Define(self.stage, "/dome_light")
        dome.CreateIntensityAttr(300.0)
        sun = UsdLux.DistantLight.Define(self.stage, "/distant_light")
        sun.CreateIntensityAttr(2500.0)
        sun.CreateAngleAttr(1.0)
        xf = UsdGeom.Xformable(sun)
        xf.ClearXformOpOrder()
        angles = (-50.0, 35.0, 0.0) if self.up_axis == "Y" else (40.0, 0.0, 35.0)  # from above, to the side
        xf.AddRotateXYZOp().Set(Gf.Vec3f(*angles))

    # ---- frames ---------------------------------------------------------------------------------

    def begin_frame(self, time):
        """Start a frame at ``time`` seconds: what follows is written at time code ``time * fps``."""
        self.time = time
        code = time * self.fps
        self._code = float(round(code)) if abs(code - round(code)) < 1e-6 else code  # frames land on integers
        first, last = self._range or (self._code, self._code)
        self._range = min(first, self._code), max(last, self._code)
        self.stage.SetStartTimeCode(self._range[0])
        self.stage.SetEndTimeCode(self._range[1])

    def end_frame(self):
        """End the frame (USD needs nothing flushed; kept for the renderers' shared protocol)."""

    def save(self) -> bool:
        """Write the stage to its file; False for an in-memory stage or a failed write."""
        layer = self.stage.GetRootLayer()
        if layer.anonymous:
            return False
        try:
            return bool(layer.Save())
        except Tf.ErrorException:
            return False

    # ---- helpers --------------------------------------------------------------------------------

    def _path(self, name: str, parent_body=None, is_template=False) -> str:
        if is_template:
            if not self.stage.GetPrimAtPath(TEMPLATES):
                # a class: templates are not drawn themselves, only their instances are
                self.stage.DefinePrim(TEMPLATES).SetSpecifier(Sdf.SpecifierClass)
            parent = TEMPLATES
        elif parent_body is not None:
            parent = self.register_body(parent_body)
        else:
            parent = "/root"
        return f"{parent}/{Tf.MakeValidIdentifier(str(name))}"

    def _when(self, is_template=False) -> Usd.TimeCode:
        return Usd.TimeCode.Default() if is_template else Usd.TimeCode(self._code)

    @staticmethod
    def _xform_ops(prim) -> list:
        xf = UsdGeom.Xformable(prim)
        ops = xf.GetOrderedXformOps()
        kinds = [UsdGeom.XformOp.TypeTranslate, UsdGeom.XformOp.TypeOrient, UsdGeom.XformOp.TypeScale]
        if [op.GetOpType() for op in ops] != kinds:
            xf.ClearXformOpOrder()
            ops = [xf.AddTranslateOp(), xf.AddOrientOp(), xf.AddScaleOp()]
        return ops

    def _place(self, prim, pos, rot, scale, visible, is_template):
        """Transform and visibility of a shape at this frame (templates get theirs from each instance)."""
        if is_template:
            return
        when = self._when()
        translate, orient, scaling = self._xform_ops(prim)
        translate.Set(Gf.Vec3d(*(float(c) for c in to_numpy(pos, np.float64).ravel())), when)
        orient.Set(_quatf(rot), when)
        scaling.Set(Gf.Vec3f(*(float(c) for c in to_numpy(scale, np.float64).ravel())), when)
        _set_visibility(prim, visible, when)

    def _set_colors(self, prim, colors, when, per=()):
        """displayColor: one colour (constant) or one per element; ``per`` maps element counts to
        interpolations, e.g. ``{n_points: "vertex", n_faces: "uniform"}``."""
        if colors is None:
            return
        c = colors_array(colors)
        interpolation = UsdGeom.Tokens.constant if len(c) == 1 else dict(per).get(len(c))
        if interpolation is None:
            expected = " or ".join(str(n) for n in [1, *sorted(dict(per))])
            raise ValueError(f"{prim.GetPath()}: got {len(c)} colours, expected {expected}")
        primvar = UsdGeom.PrimvarsAPI(prim).CreatePrimvar("displayColor", Sdf.ValueTypeNames.Color3fArray)
        primvar.SetInterpolation(interpolation)
        primvar.Set(_vec3f(c), when)

    def _set_instances(self, path: str, prototype, positions, scales, orientations=None):
        """A point instancer of one prototype (defined once, by ``prototype(path)``) at this frame."""
        inst = UsdGeom.PointInstancer.Define(self.stage, path)
        if path not in self._written:
            inst.CreatePrototypesRel().SetTargets([prototype(f"{path}/prototype").GetPath()])
            self._written.add(path)
        when = self._when()
        inst.GetPositionsAttr().Set(_vec3f(positions), when)
        inst.GetScalesAttr().Set(_vec3f(scales), when)
        if orientations is not None:  # quath stores (imaginary, real): rows of Warp's (x, y, z, w) order
            inst.GetOrientationsAttr().Set(Vt.QuathArray.FromNumpy(orientations.astype(np.float16)), when)
        if self._instance_counts.get(path) != len(positions):  # protoIndices only change with the count
            inst.GetProtoIndicesAttr().Set(Vt.IntArray.FromNumpy(np.zeros(len(positions), np.int32)), when)
            self._instance_counts[path] = len(positions)
        return inst

    # ---- points, meshes, lines ------------------------------------------------------------------

    def render_points(self, name: str, points, radius, colors=None, as_spheres: bool = True,
                      visible: bool = True):
        """Points as instanced spheres (``as_spheres``) or as a USD ``Points`` prim.

        ``radius`` is one radius or one per point; ``colors`` one colour or one per point."""
        path = self._path(name)
        p = to_numpy(points, np.float32, 3)
        r = np.broadcast_to(to_numpy(radius, np.float32).ravel(), (len(p),)) if len(p) else np.zeros(0)
        when = self._when()
        if as_spheres:
            def sphere(proto_path):
                return UsdGeom.Sphere.Define(self.stage, proto_path).GetPrim()

            prim = self._set_instances(path, sphere, p, np.repeat(r[:, None], 3, axis=1)).GetPrim()
            if colors is not None and len(colors_array(colors)) == 1:  # constant: on the sphere itself
                self._set_colors(prim.GetChild("prototype"), colors, when)
            else:
                self._set_colors(prim, colors, when, {len(p): UsdGeom.Tokens.vertex})
        else:
            geom = UsdGeom.Points.Define(self.stage, path)
            geom.GetPointsAttr().Set(_vec3f(p), when)
            geom.GetWidthsAttr().Set(Vt.FloatArray.FromNumpy(np.ascontiguousarray(2.0 * r)), when)
            geom.SetWidthsInterpolation(UsdGeom.Tokens.vertex)
            geom.GetExtentAttr().Set(_extent(p, float(r.max()) if len(r) else 0.0), when)
            prim = geom.GetPrim()
            self._set_colors(prim, colors, when, {len(p): UsdGeom.Tokens.vertex})
        _set_visibility(prim, visible, when)
        return path

    def render_mesh(self, name: str, points, indices, colors=None, pos=(0.0, 0.0, 0.0),
                    rot=(0.0, 0.0, 0.0, 1.0), scale=(1.0, 1.0, 1.0), update_topology=False,
                    parent_body: str | None = None, is_template: bool = False, smooth_shading: bool = True,
                    visible: bool = True):
        """A triangle mesh: ``points`` (n, 3), ``indices`` (3 per triangle). The topology is written the
        first time and again when ``update_topology``; ``colors`` is one colour, or one per vertex or face."""
        path = self._path(name, parent_body, is_template)
        when = self._when(is_template)
        mesh = UsdGeom.Mesh.Define(self.stage, path)
        p = to_numpy(points, np.float32, 3)
        tris = to_numpy(indices, np.int32).ravel()
        if update_topology or path not in self._written:
            mesh.CreateSubdivisionSchemeAttr(UsdGeom.Tokens.none)  # the triangles as given, not a cage
            mesh.CreateDoubleSidedAttr(True)  # cloth and open surfaces show both sides
            counts = np.full(len(tris) // 3, 3, np.int32)
            mesh.GetFaceVertexCountsAttr().Set(Vt.IntArray.FromNumpy(counts), when)
            mesh.GetFaceVertexIndicesAttr().Set(Vt.IntArray.FromNumpy(np.ascontiguousarray(tris)), when)
            self._written.add(path)
        mesh.GetPointsAttr().Set(_vec3f(p), when)
        mesh.GetExtentAttr().Set(_extent(p), when)
        if not smooth_shading:  # flat: one normal per face
            corners = p[tris.reshape(-1, 3)]
            n = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
            n /= np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-12)
            mesh.GetNormalsAttr().Set(_vec3f(n), when)
            mesh.SetNormalsInterpolation(UsdGeom.Tokens.uniform)
        per = {len(tris) // 3: UsdGeom.Tokens.uniform, len(p): UsdGeom.Tokens.vertex}  # vertex if ambiguous
        self._set_colors(mesh.GetPrim(), colors, when, per)
        self._place(mesh.GetPrim(), pos, rot, scale, visible, is_template)
        return path

    def _render_segments(self, name, starts, ends, color, radius, visible):
        path = self._path(name)
        d = ends - starts
        length = np.linalg.norm(d, axis=1)
        direction = np.where(length[:, None] > 1e-12, d / np.maximum(length, 1e-12)[:, None], [0.0, 0.0, 1.0])
        orientations = quats_between([0.0, 0.0, 1.0], direction) if len(d) else np.zeros((0, 4))
        scales = np.stack([np.ones_like(length), np.ones_like(length), length], axis=1)

        def cylinder(proto_path):  # unit height along z: each instance scales it to its segment's length
            cyl = UsdGeom.Cylinder.Define(self.stage, proto_path)
            cyl.CreateAxisAttr("Z")
            cyl.CreateHeightAttr(1.0)
            return cyl.GetPrim()

        prim = self._set_instances(path, cylinder, 0.5 * (starts + ends), scales, orientations).GetPrim()
        proto = UsdGeom.Cylinder(prim.GetChild("prototype"))
        when = self._when()
        proto.GetRadiusAttr().Set(float(radius), when)
        self._set_colors(proto.GetPrim(), color, when)
        _set_visibility(prim, visible, when)
        return path

    def render_line_list(self, name: str, vertices, indices, color: Color | None = None,
                         radius: float = 0.01, visible: bool = True):
        """Independent segments between ``vertices[indices[2k]]`` and ``vertices[indices[2k + 1]]``,
        drawn as instanced cylinders of ``radius``."""
        return self._render_segments(name, *segments(vertices, indices), color, radius, visible)

    def render_line_strip(self, name: str, vertices, color: Color | None = None,
                          radius: float = 0.01, visible: bool = True):
        """A polyline through ``vertices``, drawn as instanced cylinders of ``radius``."""
        return self._render_segments(name, *segments(vertices), color, radius, visible)

    # ---- analytic shapes ------------------------------------------------------------------------

    def _shape(self, schema, name, parent_body, is_template, color):
        path = self._path(name, parent_body, is_template)
        geom = schema.Define(self.stage, path)
        self._set_colors(geom.GetPrim(), color, self._when(is_template))
        return path, geom

    def render_sphere(self, name: str, pos: tuple, rot: tuple, radius: float, parent_body: str | None = None,
                      is_template: bool = False, color: Color | None = None,
                      visible: bool = True):
        """A sphere of ``radius`` centred at ``pos``."""
        path, geom = self._shape(UsdGeom.Sphere, name, parent_body, is_template, color)
        geom.GetRadiusAttr().Set(float(radius), self._when(is_template))
        self._place(geom.GetPrim(), pos, rot, (1.0, 1.0, 1.0), visible, is_template)
        return path

    def render_box(self, name: str, pos: tuple, rot: tuple, extents: tuple, parent_body: str | None = None,
                   is_template: bool = False, color: Color | None = None, visible: bool = True):
        """A box of half-extents ``extents`` (a size-2 cube scaled by them)."""
        path, geom = self._shape(UsdGeom.Cube, name, parent_body, is_template, color)
        geom.CreateSizeAttr(2.0)
        self._place(geom.GetPrim(), pos, rot, extents, visible, is_template)
        if is_template:  # no per-instance transform here: the extents go into the template's own scale
            UsdGeom.Xformable(geom).ClearXformOpOrder()
            UsdGeom.Xformable(geom).AddScaleOp().Set(Gf.Vec3f(*(float(e) for e in extents)))
        return path

    def _render_round(self, schema, name, pos, rot, radius, half_height, parent_body, is_template, up_axis,
                      color, visible):
        path, geom = self._shape(schema, name, parent_body, is_template, color)
        when = self._when(is_template)
        geom.CreateAxisAttr(AXES[axis_index(up_axis)])
        geom.GetRadiusAttr().Set(float(radius), when)
        geom.GetHeightAttr().Set(2.0 * float(half_height), when)
        self._place(geom.GetPrim(), pos, rot, (1.0, 1.0, 1.0), visible, is_template)
        return path

    def render_capsule(self, name: str, pos: tuple, rot: tuple, radius: float, half_height: float,
                       parent_body: str | None = None, is_template: bool = False, up_axis: int = 1,
                       color: Color | None = None, visible: bool = True):
        """A capsule along axis ``up_axis``: a cylinder of height ``2 * half_height`` and hemisphere caps."""
        return self._render_round(UsdGeom.Capsule, name, pos, rot, radius, half_height, parent_body,
                                  is_template, up_axis, color, visible)

    def render_cylinder(self, name: str, pos: tuple, rot: tuple, radius: float, half_height: float,
                        parent_body: str | None = None, is_template: bool = False, up_axis: int = 1,
                        color: Color | None = None, visible: bool = True):
        """A cylinder of height ``2 * half_height`` along axis ``up_axis``."""
        return self._render_round(UsdGeom.Cylinder, name, pos, rot, radius, half_height, parent_body,
                                  is_template, up_axis, color, visible)

    def render_cone(self, name: str, pos: tuple, rot: tuple, radius: float, half_height: float,
                    parent_body: str | None = None, is_template: bool = False, up_axis: int = 1,
                    color: Color | None = None, visible: bool = True):
        """A cone of height ``2 * half_height`` along axis ``up_axis``, apex towards +axis."""
        return self._render_round(UsdGeom.Cone, name, pos, rot, radius, half_height, parent_body, is_template,
                                  up_axis, color, visible)

    def render_arrow(self, name: str, pos: tuple, rot: tuple, base_radius: float, base_height: float,
                     cap_radius: float | None = None, cap_height: float | None = None,
                     parent_body: str | None = None, is_template: bool = False, up_axis: int = 1,
                     color: Color | None = None, visible: bool = True):
        """An arrow from ``pos`` along axis ``up_axis``: a cylinder shaft and a cone head (by default
        twice the shaft's radius and twice as long as wide)."""
        path = self._path(name, parent_body, is_template)
        when = self._when(is_template)
        arrow = UsdGeom.Xform.Define(self.stage, path)
        axis = axis_index(up_axis)
        cap_radius, cap_height = arrow_cap(base_radius, cap_radius, cap_height)
        parts = (("base", UsdGeom.Cylinder, base_radius, base_height, 0.0),
                 ("cap", UsdGeom.Cone, cap_radius, cap_height, base_height))
        for part, schema, radius, height, start in parts:
            geom = schema.Define(self.stage, f"{path}/{part}")
            geom.CreateAxisAttr(AXES[axis])
            geom.GetRadiusAttr().Set(float(radius), when)
            geom.GetHeightAttr().Set(float(height), when)
            offset = np.zeros(3)
            offset[axis] = start + 0.5 * float(height)
            xf = UsdGeom.Xformable(geom)
            op = xf.GetOrderedXformOps()[0] if xf.GetOrderedXformOps() else xf.AddTranslateOp()
            op.Set(Gf.Vec3d(*offset), when)
            self._set_colors(geom.GetPrim(), color, when)
        self._place(arrow.GetPrim(), pos, rot, (1.0, 1.0, 1.0), visible, is_template)
        return path

    def render_plane(self, name: str, pos: tuple, rot: tuple, width: float, length: float,
                     color: Color = (1.0, 1.0, 1.0), color2=None, parent_body: str | None = None,
                     is_template: bool = False, u_scaling: float = 1.0, v_scaling: float = 1.0,
                     visible: bool = True):
        """A rectangle in its local x-z plane (normal +y), ``2 * width`` by ``2 * length``. ``color2``,
        ``u_scaling`` and ``v_scaling`` (a checker texture in Warp's OpenGL renderer) are ignored."""
        path = self._path(name, parent_body, is_template)
        when = self._when(is_template)
        mesh = UsdGeom.Mesh.Define(self.stage, path)
        w, h = float(width), float(length)
        corners = np.array([[-w, 0, -h], [-w, 0, h], [w, 0, h], [w, 0, -h]])  # counter-clockwise seen from +y
        self._write_quad(mesh, corners, (0.0, 1.0, 0.0), when)
        self._set_colors(mesh.GetPrim(), color, when)
        self._place(mesh.GetPrim(), pos, rot, (1.0, 1.0, 1.0), visible, is_template)
        return path

    def render_ground(self, size: float = 100.0, plane=None):
        """A static square ground of half-size ``size``, perpendicular to the up axis through the origin,
        or in ``plane = (nx, ny, nz, d)``: the points x with ``dot(n, x) == d``."""
        normal = np.eye(3)[axis_index(self.up_axis)] if plane is None else to_numpy(plane, np.float64)[:3]
        normal = normal / np.linalg.norm(normal)
        center = normal * (0.0 if plane is None else float(plane[3]))
        u = np.cross(normal, [1.0, 0.0, 0.0] if abs(normal[0]) < 0.9 else [0.0, 1.0, 0.0])
        u /= np.linalg.norm(u)
        v = np.cross(normal, u)  # u x v == normal: the corners below turn counter-clockwise about it
        s = float(size)
        corners = center + s * np.array([-u - v, u - v, u + v, -u + v])
        mesh = UsdGeom.Mesh.Define(self.stage, "/root/ground")
        self._write_quad(mesh, corners, normal, Usd.TimeCode.Default())
        return "/root/ground"

    @staticmethod
    def _write_quad(mesh, corners, normal, when):
        mesh.CreateSubdivisionSchemeAttr(UsdGeom.Tokens.none)
        mesh.CreateDoubleSidedAttr(True)
        mesh.GetFaceVertexCountsAttr().Set(Vt.IntArray([4]))
        mesh.GetFaceVertexIndicesAttr().Set(Vt.IntArray([0, 1, 2, 3]))
        mesh.GetPointsAttr().Set(_vec3f(corners), when)
        mesh.GetExtentAttr().Set(_extent(np.asarray(corners)), when)
        mesh.GetNormalsAttr().Set(_vec3f(np.tile(normal, (4, 1))), when)
        mesh.SetNormalsInterpolation(UsdGeom.Tokens.vertex)

    # ---- bodies, instances, references ----------------------------------------------------------

    def register_body(self, body_name):
        """A transform ``/root/<body_name>`` that shapes given ``parent_body=body_name`` are children of."""
        path = f"/root/{Tf.MakeValidIdentifier(str(body_name))}"
        if not UsdGeom.Xform.Get(self.stage, path):
            UsdGeom.Xform.Define(self.stage, path)
        return path

    def add_shape_instance(self, name: str, shape, body, pos: tuple, rot: tuple,
                           scale: tuple = (1.0, 1.0, 1.0), color1=None, color2=None, custom_index: int = -1,
                           visible: bool = True):
        """An instance of a template shape (the path a ``render_*(..., is_template=True)`` call returned),
        under ``body`` (or ``/root``), placed by ``pos``, ``rot`` and ``scale``; ``color1`` overrides its
        colour, ``color2`` and ``custom_index`` are ignored."""
        path = self._path(name, body)
        prim = self.stage.DefinePrim(path)  # typeless: the prim type comes from the referenced template
        if path not in self._written:
            prim.GetReferences().AddInternalReference(str(shape))
            self._written.add(path)
        self._set_colors(prim, color1, self._when())
        self._place(prim, pos, rot, scale, visible, False)
        return path

    def render_ref(self, name: str, path: str, pos: tuple, rot: tuple, scale: tuple,
                   color: tuple | None = None):
        """Reference the USD file ``path`` as ``/root/<name>``, placed by ``pos``, ``rot`` and ``scale``;
        ``color`` becomes the display colour of every geometry prim in it."""
        prim_path = self._path(name)
        prim = UsdGeom.Xform.Define(self.stage, prim_path).GetPrim()
        if prim_path not in self._written:
            prim.GetReferences().AddReference(os.fspath(path))
            self._written.add(prim_path)
        self._place(prim, pos, rot, scale, True, False)
        if color is not None:
            for child in Usd.PrimRange(prim):
                if child.IsA(UsdGeom.Gprim):
                    self._set_colors(child, color, self._when())
        return prim_path
