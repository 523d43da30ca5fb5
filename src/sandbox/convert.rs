//! Values across the boundary, in one recursive pass each way, without a `JSON.stringify`
//! round trip (the rules are in the README's "Values across the boundary").
//!
//! JS → JSON ([`ToJson`]):
//! - keys keep their order; `__proto__` and `constructor` are ordinary keys;
//! - integral numbers become JSON integers; `-0` stays `-0`; `NaN` and `±Infinity` are
//!   errors;
//! - a `BigInt` becomes the exact integer;
//! - `toJSON` is honoured (so a `Date` becomes its ISO string); a throwing `toJSON` or getter
//!   fails this conversion only;
//! - `undefined` members are dropped; `undefined` in an array, functions, symbols, cycles,
//!   `Map`, `Set`, `WeakMap`, `WeakSet`, typed arrays, `ArrayBuffer`, `DataView` and promises
//!   are errors that name the path (with a hint for the convertible ones);
//! - an `Error` becomes `{"name", "message", …its enumerable own properties}`;
//! - strings with a lone surrogate are errors (JSON text must be valid Unicode);
//! - nesting deeper than [`MAX_DEPTH`] is an error, never a host stack overflow.
//!
//! JSON → JS ([`json_to_js`]): properties are *defined*, never assigned, so setters a program
//! installed on `Object.prototype` or `Array.prototype` never run; integers beyond the safe
//! range become `BigInt`.

use std::collections::HashMap;

use rquickjs::atom::PredefinedAtom;
use rquickjs::object::Property;
use rquickjs::{Array, Atom, BigInt, Coerced, Ctx, Filter, Function, Object, Type, Value};
use serde_json::{Map, Number};
use smallvec::SmallVec;

use super::stack::StackFloor;
use crate::value::{FxBuild, MAX_DEPTH, PathSeg};

/// Largest integer a JS number holds exactly: 2^53 − 1.
const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// Built-ins captured before any program code runs, so that a program replacing
/// `globalThis.Map` (or anything else) cannot change how values convert.
///
/// Only the two prototypes are read up front (every conversion needs them); the rest are
/// read from the prelude's primordials object (which no program code can reach) when a
/// value needs them.
#[derive(Clone)]
pub(crate) struct Primordials<'js> {
    source: Object<'js>,
    object_prototype: Object<'js>,
    array_prototype: Object<'js>,
    /// The run's stack floor: every call a conversion makes into JavaScript (`toJSON`, a
    /// check of the value's class) gives the engine its limit from there first.
    pub(crate) floor: StackFloor,
}

/// Built-ins that are not JSON, with what to do instead.
const NOT_JSON_CLASSES: &[(&str, &str)] = &[
    ("Map", "convert it with Object.fromEntries(map) or [...map]"),
    ("Set", "convert it with [...set]"),
    ("WeakMap", "a WeakMap cannot be listed; use a plain object"),
    ("WeakSet", "a WeakSet cannot be listed; use an array"),
    (
        "ArrayBuffer",
        "convert it with Array.from(new Uint8Array(buffer))",
    ),
    ("Promise", "await it first"),
    ("RegExp", "convert it with String(regexp)"),
    ("WeakRef", "use the value it refers to"),
];

impl<'js> Primordials<'js> {
    /// Reads the built-ins from `source` (the prelude's primordials object).
    ///
    /// # Errors
    /// When `source` lacks `ObjectPrototype` or `ArrayPrototype` (an engine error).
    pub(crate) fn capture(source: &Object<'js>, floor: StackFloor) -> rquickjs::Result<Self> {
        Ok(Primordials {
            object_prototype: source.get("ObjectPrototype")?,
            array_prototype: source.get("ArrayPrototype")?,
            source: source.clone(),
            floor,
        })
    }

    /// Calls the built-in `name` with `args`, if this frame is above the run's stack floor
    /// (`None` below it, with nothing thrown) and the call does not throw.
    fn call_builtin<A, R>(&self, ctx: &Ctx<'js>, name: &str, args: A) -> Option<R>
    where
        A: rquickjs::function::IntoArgs<'js>,
        R: rquickjs::FromJs<'js>,
    {
        if !self.floor.room(ctx) {
            return None;
        }
        self.get::<Function<'js>>(name)
            .and_then(|f| f.call(args))
            .ok()
    }

    /// The stack trace the engine wrote for `error`, an Error object, in the coordinates of
    /// the code the engine runs (the getter programs see maps them to the program's own
    /// source). `None` when it has none, or below the stack floor.
    pub(crate) fn engine_stack(&self, ctx: &Ctx<'js>, error: &Value<'js>) -> Option<String> {
        let text: Value<'js> = self.call_builtin(
            ctx,
            "ErrorStackNative",
            (rquickjs::function::This(error.clone()),),
        )?;
        text.as_string()?.to_string().ok()
    }

    /// What `sites` (a WeakMap of the prelude's) holds for `error`, read with
    /// `WeakMap.prototype.get` as it was before the program ran: where a host-made
    /// `ToolCallError` surfaced (see `Internals::sites`). `None` below the stack floor.
    pub(crate) fn site_of(
        &self,
        ctx: &Ctx<'js>,
        sites: &Object<'js>,
        error: &Value<'js>,
    ) -> Option<Value<'js>> {
        self.call_builtin(
            ctx,
            "weakMapGet",
            (rquickjs::function::This(sites.clone()), error.clone()),
        )
    }

    /// `text` as Rust text, a lone surrogate as U+FFFD (made well-formed by
    /// `String.prototype.toWellFormed` as it was before the program ran). `None` below the
    /// stack floor.
    pub(crate) fn text(&self, ctx: &Ctx<'js>, text: &rquickjs::String<'js>) -> Option<String> {
        text.to_string().ok().or_else(|| {
            self.call_builtin::<_, rquickjs::String<'js>>(
                ctx,
                "stringToWellFormed",
                (rquickjs::function::This(text.clone()),),
            )?
            .to_string()
            .ok()
        })
    }

    /// `Object.prototype` as it was before the program ran.
    pub(crate) fn object_prototype(&self) -> &Object<'js> {
        &self.object_prototype
    }

    /// `Array.prototype` as it was before the program ran.
    pub(crate) fn array_prototype(&self) -> &Object<'js> {
        &self.array_prototype
    }

    fn get<T: rquickjs::FromJs<'js>>(&self, name: &str) -> rquickjs::Result<T> {
        self.source.get(name)
    }
}

/// Why a JS value could not become JSON.
pub(crate) enum ConvertError {
    /// The value is not JSON: the path and what to do.
    Invalid(String),
    /// The engine threw an uncatchable exception (interrupt, out of memory): propagate it.
    Engine(rquickjs::Error),
    /// The run was stopped (timeout, memory, cancellation) while converting.
    Stopped,
}

impl From<rquickjs::Error> for ConvertError {
    fn from(e: rquickjs::Error) -> Self {
        ConvertError::Engine(e)
    }
}

/// Converts JS values to JSON, tracking cycles and size.
pub(crate) struct ToJson<'a, 'js> {
    ctx: &'a Ctx<'js>,
    prim: &'a Primordials<'js>,
    /// Objects being converted, for cycle detection (inline for the usual shallow values:
    /// no allocation per call).
    stack: SmallVec<[Object<'js>; 8]>,
    /// Approximate JSON text bytes produced so far.
    bytes: usize,
    max_bytes: usize,
    /// What the size limit is called in messages ("tool input", …).
    limit_name: &'static str,
    to_json: Atom<'js>,
    length: Atom<'js>,
    /// Keys already read as Rust strings (objects of one shape repeat their keys).
    keys: HashMap<Atom<'js>, String, FxBuild>,
    /// The run's stop flags, polled every [`STOP_POLL`] values.
    flags: Option<&'a super::flags::RunFlags>,
    /// Whether `Object.prototype` and `Array.prototype` carry a `toJSON`, once looked at
    /// (see [`ToJson::planted_to_json`]).
    planted: (Option<bool>, Option<bool>),
    visited: usize,
    /// Deepest nesting accepted: [`MAX_DEPTH`] unless set lower.
    max_depth: usize,
}

/// What an object is to `toJSON`: an object or array whose prototype is the original
/// `Object.prototype` or `Array.prototype`, one with no prototype, or anything else.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Plain {
    Object,
    Array,
    NullPrototype,
    No,
}

/// How many values a conversion walks between two looks at the run's stop flags.
const STOP_POLL: usize = 4096;

/// The key a value sits under, for `toJSON(key)`; formatted only when a `toJSON` runs.
#[derive(Clone, Copy)]
enum Key<'k> {
    Name(&'k str),
    Index(usize),
}

impl Key<'_> {
    fn text(self) -> String {
        match self {
            Key::Name(s) => s.to_owned(),
            Key::Index(i) => i.to_string(),
        }
    }
}

impl<'a, 'js> ToJson<'a, 'js> {
    pub(crate) fn new(
        ctx: &'a Ctx<'js>,
        prim: &'a Primordials<'js>,
        max_bytes: usize,
        limit_name: &'static str,
    ) -> Self {
        ToJson {
            ctx,
            prim,
            stack: SmallVec::new(),
            bytes: 0,
            max_bytes,
            limit_name,
            to_json: Atom::from_predefined(ctx.clone(), PredefinedAtom::ToJSON),
            length: Atom::from_predefined(ctx.clone(), PredefinedAtom::Length),
            keys: HashMap::default(),
            flags: None,
            visited: 0,
            planted: (None, None),
            max_depth: MAX_DEPTH,
        }
    }

    /// Accepts at most `levels` of nesting (for a value that will sit one level down in
    /// another, such as a program's result in `run_code`'s canonical value).
    pub(crate) fn max_depth(mut self, levels: usize) -> Self {
        self.max_depth = levels;
        self
    }

    /// Stops the conversion when the run is stopped (polled every few thousand values).
    pub(crate) fn watching(mut self, flags: &'a super::flags::RunFlags) -> Self {
        self.flags = Some(flags);
        self
    }

    fn add_bytes(&mut self, n: usize, path: &PathSeg<'_>) -> Result<(), ConvertError> {
        self.bytes += n;
        if self.bytes > self.max_bytes {
            return Err(ConvertError::Invalid(format!(
                "{path}: the value is larger than the {} limit of {} bytes",
                self.limit_name, self.max_bytes
            )));
        }
        Ok(())
    }

    /// Converts a top-level value. `Ok(None)` means `undefined` (or a function/symbol, which
    /// are refused below the top level too): the caller decides what that means.
    pub(crate) fn convert_root(
        &mut self,
        value: Value<'js>,
        path: &PathSeg<'_>,
    ) -> Result<Option<serde_json::Value>, ConvertError> {
        if value.is_undefined() {
            return Ok(None);
        }
        self.convert(value, Key::Name(""), path, 0).map(Some)
    }

    fn thrown(&self, what: &str, path: &PathSeg<'_>) -> ConvertError {
        let caught = self.ctx.catch();
        if caught.is_uncatchable_error() {
            // Re-raise: an interrupt or out-of-memory must end the run.
            return ConvertError::Engine(self.ctx.throw(caught));
        }
        ConvertError::Invalid(format!(
            "{path}: {what} threw: {}",
            describe_thrown(&caught)
        ))
    }

    fn convert(
        &mut self,
        value: Value<'js>,
        key: Key<'_>,
        path: &PathSeg<'_>,
        depth: usize,
    ) -> Result<serde_json::Value, ConvertError> {
        self.visited += 1;
        if self.visited.is_multiple_of(STOP_POLL)
            && let Some(flags) = self.flags
            && flags.reason().is_some()
        {
            return Err(ConvertError::Stopped);
        }
        // A proxy answers "is it an array?" and "what is its prototype?" from its traps,
        // which may throw (a revoked proxy always does): both are asked as JavaScript asks
        // them, so that a throw is the program's error, not the engine's.
        let ty = if !value.is_proxy() {
            value.type_of()
        } else if value.is_function() {
            Type::Function
        } else if self
            .through_proxy("ArrayIsArray", &value, path)?
            .as_bool()
            .unwrap_or(false)
        {
            Type::Array
        } else {
            Type::Proxy
        };
        match ty {
            Type::Null => {
                self.add_bytes(4, path)?;
                Ok(serde_json::Value::Null)
            }
            Type::Bool => {
                self.add_bytes(5, path)?;
                Ok(serde_json::Value::Bool(value.as_bool().unwrap_or(false)))
            }
            Type::Int => {
                self.add_bytes(11, path)?;
                Ok(serde_json::Value::Number(
                    value.as_int().unwrap_or(0).into(),
                ))
            }
            Type::Float => {
                self.add_bytes(24, path)?;
                let f = value.as_float().unwrap_or(f64::NAN);
                number_from_f64(f)
                    .map(serde_json::Value::Number)
                    .ok_or_else(|| {
                        ConvertError::Invalid(format!(
                            "{path}: {} is not JSON (only finite numbers are)",
                            if f.is_nan() {
                                "NaN".to_owned()
                            } else if f > 0.0 {
                                "Infinity".to_owned()
                            } else {
                                "-Infinity".to_owned()
                            }
                        ))
                    })
            }
            Type::String => {
                let s = value.as_string().map(|s| s.to_string()).transpose();
                match s {
                    Ok(Some(s)) => {
                        self.add_bytes(s.len() + 2, path)?;
                        Ok(serde_json::Value::String(s))
                    }
                    Ok(None) => Ok(serde_json::Value::Null),
                    Err(rquickjs::Error::Utf8(_)) => Err(ConvertError::Invalid(format!(
                        "{path}: the string contains a lone surrogate (half of a UTF-16 pair), which JSON text cannot carry; remove it or replace it with \\uFFFD"
                    ))),
                    Err(e) => Err(ConvertError::Engine(e)),
                }
            }
            Type::BigInt => {
                let text: Coerced<String> = value.get()?;
                self.add_bytes(text.0.len(), path)?;
                let n: Number = serde_json::from_str(&text.0).map_err(|_| {
                    ConvertError::Invalid(format!("{path}: BigInt {} could not be read", text.0))
                })?;
                Ok(serde_json::Value::Number(n))
            }
            Type::Undefined | Type::Uninitialized => Err(ConvertError::Invalid(format!(
                "{path}: undefined is not JSON here (use null, or leave the member out)"
            ))),
            Type::Symbol => Err(ConvertError::Invalid(format!(
                "{path}: a Symbol is not JSON"
            ))),
            Type::Function | Type::Constructor => {
                let source: Option<String> = self.prim.call_builtin(
                    self.ctx,
                    "FunctionPrototypeToString",
                    (rquickjs::function::This(value),),
                );
                let is_class = source.is_some_and(|s| super::prelude::is_class_source(&s));
                Err(ConvertError::Invalid(if is_class {
                    format!(
                        "{path}: a class is not JSON (pass plain data, such as the fields of an object made with `new`)"
                    )
                } else {
                    format!("{path}: a function is not JSON (call it and pass its result)")
                }))
            }
            Type::Module | Type::Unknown => Err(ConvertError::Invalid(format!(
                "{path}: this value is not JSON"
            ))),
            Type::Promise => Err(ConvertError::Invalid(format!(
                "{path}: a Promise is not JSON (await it first)"
            ))),
            Type::Array | Type::Object | Type::Exception | Type::Proxy => {
                let Some(obj) = value.as_object().cloned() else {
                    return Err(ConvertError::Invalid(format!(
                        "{path}: this value is not JSON"
                    )));
                };
                self.convert_object(obj, ty, key, path, depth)
            }
        }
    }

    fn convert_object(
        &mut self,
        obj: Object<'js>,
        ty: Type,
        key: Key<'_>,
        path: &PathSeg<'_>,
        depth: usize,
    ) -> Result<serde_json::Value, ConvertError> {
        if depth >= self.max_depth {
            return Err(ConvertError::Invalid(format!(
                "{path}: the value nests deeper than {} levels",
                self.max_depth
            )));
        }
        if super::stack::too_low_to_convert() {
            return Err(ConvertError::Invalid(format!(
                "{path}: the value nests too deep for the stack left here (the program's own calls are deep)"
            )));
        }
        let is_array = matches!(ty, Type::Array);
        let proto = if obj.is_proxy() {
            self.through_proxy("ObjectGetPrototypeOf", obj.as_value(), path)?
                .into_object()
        } else {
            obj.get_prototype()
        };
        let plain = match &proto {
            None => Plain::NullPrototype,
            Some(p) if p == self.prim.object_prototype() => Plain::Object,
            Some(p) if is_array && p == self.prim.array_prototype() => Plain::Array,
            Some(_) => Plain::No,
        };
        // toJSON first, as JSON.stringify does; but a toJSON a program planted on
        // `Object.prototype` or `Array.prototype` does not change how plain objects and
        // arrays convert: for those, only their own toJSON counts.
        let to_json: Value<'js> = if self.planted_to_json(plain) {
            let own: bool = self
                .prim
                .call_builtin(self.ctx, "ObjectHasOwn", (obj.clone(), "toJSON"))
                .unwrap_or(false);
            if own {
                obj.get(self.to_json.clone())
                    .unwrap_or_else(|_| Value::new_undefined(self.ctx.clone()))
            } else {
                Value::new_undefined(self.ctx.clone())
            }
        } else {
            match obj.get(self.to_json.clone()) {
                Ok(v) => v,
                Err(rquickjs::Error::Exception) => return Err(self.thrown("reading toJSON", path)),
                Err(e) => return Err(e.into()),
            }
        };
        if let Some(f) = to_json.as_function() {
            let replaced: Value<'js> = match self
                .prim
                .floor
                .guard(self.ctx)
                .and_then(|()| f.call((rquickjs::function::This(obj.clone()), key.text())))
            {
                Ok(v) => v,
                Err(rquickjs::Error::Exception) => return Err(self.thrown("toJSON()", path)),
                Err(e) => return Err(e.into()),
            };
            if replaced.is_undefined() {
                return Err(ConvertError::Invalid(format!(
                    "{path}: toJSON() returned undefined"
                )));
            }
            if replaced.as_object().is_some_and(|o| *o == obj) {
                // toJSON returned the object itself: convert its members.
            } else {
                return self.convert(replaced, key, path, depth + 1);
            }
        }
        if self.stack.contains(&obj) {
            return Err(ConvertError::Invalid(format!(
                "{path}: the value is cyclic (it contains itself)"
            )));
        }
        if plain == Plain::No
            && !is_array
            && !matches!(ty, Type::Exception)
            && let Some(msg) = self.unsupported(&obj)
        {
            return Err(ConvertError::Invalid(format!("{path}: {msg}")));
        }
        self.stack.push(obj.clone());
        let result = if is_array {
            self.convert_array(&obj, path, depth)
        } else {
            self.convert_members(&obj, matches!(ty, Type::Exception), path, depth)
        };
        self.stack.pop();
        result
    }

    /// The built-in `name` (`ArrayIsArray`, `ObjectGetPrototypeOf`) called with a proxy:
    /// what its trap answers, or the error it threw.
    fn through_proxy(
        &self,
        name: &str,
        proxy: &Value<'js>,
        path: &PathSeg<'_>,
    ) -> Result<Value<'js>, ConvertError> {
        self.prim.floor.guard(self.ctx)?;
        let f: Function<'js> = self.prim.get(name)?;
        match f.call((proxy.clone(),)) {
            Ok(v) => Ok(v),
            Err(rquickjs::Error::Exception) => Err(self.thrown("a proxy's trap", path)),
            Err(e) => Err(e.into()),
        }
    }

    /// Whether the prototype chain of a plain object or array carries a `toJSON` a program
    /// planted on `Object.prototype` or `Array.prototype` (each looked at once per
    /// conversion, and only when a value of that kind is met).
    fn planted_to_json(&mut self, plain: Plain) -> bool {
        let look = |cached: &mut Option<bool>, proto: &Object<'js>| {
            *cached.get_or_insert_with(|| proto.contains_key(self.to_json.clone()).unwrap_or(true))
        };
        match plain {
            Plain::No | Plain::NullPrototype => false,
            Plain::Object => look(&mut self.planted.0, self.prim.object_prototype()),
            Plain::Array => {
                look(&mut self.planted.0, self.prim.object_prototype())
                    || look(&mut self.planted.1, self.prim.array_prototype())
            }
        }
    }

    /// A message when `obj` is a built-in that is not JSON.
    fn unsupported(&self, obj: &Object<'js>) -> Option<String> {
        for (name, hint) in NOT_JSON_CLASSES {
            let Ok(ctor) = self.prim.get::<Object<'js>>(name) else {
                continue;
            };
            if obj.is_instance_of(&ctor) {
                let article = if name.starts_with(['A', 'E', 'I', 'O', 'U']) {
                    "an"
                } else {
                    "a"
                };
                return Some(format!("{article} {name} is not JSON; {hint}"));
            }
        }
        let is_view: bool = self
            .prim
            .call_builtin(self.ctx, "ArrayBufferIsView", (obj.clone(),))
            .unwrap_or(false);
        if is_view {
            return Some(
                "a typed array or DataView is not JSON; convert it with Array.from(view)"
                    .to_owned(),
            );
        }
        None
    }

    fn convert_array(
        &mut self,
        obj: &Object<'js>,
        path: &PathSeg<'_>,
        depth: usize,
    ) -> Result<serde_json::Value, ConvertError> {
        let len: Value<'js> = match obj.get(self.length.clone()) {
            Ok(v) => v,
            Err(rquickjs::Error::Exception) => return Err(self.thrown("reading length", path)),
            Err(e) => return Err(e.into()),
        };
        let len = len.as_number().unwrap_or(0.0);
        // Each element takes at least one byte of JSON text: refuse huge sparse arrays
        // before walking them.
        if len > (self.max_bytes.saturating_sub(self.bytes)) as f64 {
            return Err(ConvertError::Invalid(format!(
                "{path}: an array of {len} elements is larger than the {} limit of {} bytes",
                self.limit_name, self.max_bytes
            )));
        }
        let len = len as usize;
        self.add_bytes(2, path)?;
        let mut out = Vec::with_capacity(len.min(1 << 16));
        for i in 0..len {
            let item: Value<'js> = obj.get(i as u32).map_err(|e| match e {
                rquickjs::Error::Exception => self.thrown("reading an element", &path.index(i)),
                e => e.into(),
            })?;
            if item.is_undefined() {
                return Err(ConvertError::Invalid(format!(
                    "{}: undefined is not JSON in an array (use null)",
                    path.index(i)
                )));
            }
            out.push(self.convert(item, Key::Index(i), &path.index(i), depth + 1)?);
            self.add_bytes(1, path)?;
        }
        Ok(serde_json::Value::Array(out))
    }

    fn convert_members(
        &mut self,
        obj: &Object<'js>,
        is_error: bool,
        path: &PathSeg<'_>,
        depth: usize,
    ) -> Result<serde_json::Value, ConvertError> {
        let keys = obj.own_keys::<Atom<'js>>(Filter::new().string().enum_only());
        let mut map = Map::with_capacity(keys.len() + if is_error { 2 } else { 0 });
        self.add_bytes(2, path)?;
        if is_error {
            for key in ["name", "message"] {
                if let Ok(v) = obj.get::<_, Coerced<String>>(key) {
                    self.add_bytes(key.len() + v.0.len() + 6, path)?;
                    map.insert(key.to_owned(), serde_json::Value::String(v.0));
                }
            }
        }
        for atom in keys {
            let atom = match atom {
                Ok(a) => a,
                Err(rquickjs::Error::Exception) => return Err(self.thrown("listing keys", path)),
                Err(e) => return Err(e.into()),
            };
            let key = match self.keys.get(&atom) {
                Some(k) => k.clone(),
                None => {
                    // Through a JS string: `Atom::to_string` neither checks UTF-8 (a lone
                    // surrogate would make an invalid Rust string) nor keeps a NUL.
                    let k = match atom.to_js_string().and_then(|k| k.to_string()) {
                        Ok(k) => k,
                        Err(rquickjs::Error::Utf8(_)) => {
                            return Err(ConvertError::Invalid(format!(
                                "{path}: a key contains a lone surrogate, which JSON text cannot carry"
                            )));
                        }
                        Err(e) => return Err(e.into()),
                    };
                    self.keys.insert(atom.clone(), k.clone());
                    k
                }
            };
            let v: Value<'js> = match obj.get(atom) {
                Ok(v) => v,
                Err(rquickjs::Error::Exception) => {
                    return Err(self.thrown("a getter", &path.key(&key)));
                }
                Err(e) => return Err(e.into()),
            };
            if v.is_undefined() {
                continue;
            }
            let member_path = path.key(&key);
            self.add_bytes(key.len() + 4, &member_path)?;
            let converted = self.convert(v, Key::Name(&key), &member_path, depth + 1)?;
            map.insert(key, converted);
        }
        Ok(serde_json::Value::Object(map))
    }
}

/// A readable description of a thrown value: `Error: message` or the value itself.
pub(crate) fn describe_thrown(value: &Value<'_>) -> String {
    if let Some(obj) = value.as_object() {
        let text = |key: &str| {
            obj.get::<_, Value<'_>>(key)
                .ok()
                .and_then(|v| v.as_string().and_then(|s| s.to_string().ok()))
        };
        match (text("name"), text("message")) {
            (Some(n), Some(m)) if !m.is_empty() => return format!("{n}: {m}"),
            (None, Some(m)) if !m.is_empty() => return m,
            (Some(n), _) if value.is_error() => return n,
            _ => {}
        }
    }
    if value.is_null() {
        return "null".to_owned();
    }
    if value.is_undefined() {
        return "undefined".to_owned();
    }
    match value.get::<Coerced<String>>() {
        Ok(s) => s.0,
        Err(_) => "a value that cannot be shown".to_owned(),
    }
}

/// The JSON number of a finite `f64`: integral values below 1e21 print as integers (as
/// `JSON.stringify` does), `-0` stays `-0`.
pub(crate) fn number_from_f64(f: f64) -> Option<Number> {
    if !f.is_finite() {
        return None;
    }
    if f == 0.0 && f.is_sign_negative() {
        return serde_json::from_str("-0").ok();
    }
    if f.fract() == 0.0 && f.abs() < 1e21 {
        return Number::from_i128(f as i128);
    }
    Number::from_f64(f)
}

/// Converts JSON to a JS value, defining (never assigning) every property.
///
/// Takes the value: each part is freed as soon as it is converted, so a large result is
/// not held twice over (as JSON and as JS) while it converts.
///
/// # Errors
/// Engine errors only (out of memory, an interrupt).
pub(crate) fn json_to_js<'js>(
    ctx: &Ctx<'js>,
    prim: &Primordials<'js>,
    value: serde_json::Value,
) -> rquickjs::Result<Value<'js>> {
    ToJs {
        ctx,
        prim,
        atoms: HashMap::default(),
        strings: SharedStrings::default(),
        indices_safe: None,
    }
    .convert(value)
}

struct ToJs<'a, 'js> {
    ctx: &'a Ctx<'js>,
    prim: &'a Primordials<'js>,
    /// Keys already made into atoms, and whether assigning them to a fresh object is safe
    /// (no property of that name on `Object.prototype` could intercept it).
    atoms: HashMap<String, (Atom<'js>, bool), FxBuild>,
    /// Short strings already made, for later equal ones to share.
    strings: SharedStrings<'js>,
    /// Whether no array index is a property of `Array.prototype` or `Object.prototype`
    /// (checked once, for long arrays).
    indices_safe: Option<bool>,
}

/// Arrays at least this long are filled by assignment when that is safe.
const FAST_ARRAY: usize = 32;

/// The longest string (UTF-8 bytes) a conversion shares between equal values. Repeated
/// values in a result (a status, a type, a tag) are short; a long one is rarely repeated.
const SHARED_STRING_BYTES: usize = 32;

/// How many short strings a conversion makes one by one before it starts sharing them: a
/// small result does not pay for the table.
const STRINGS_BEFORE_SHARING: usize = 16;

/// The table of shared strings has `1 << SHARED_SLOT_BITS` slots.
const SHARED_SLOT_BITS: u32 = 10;

/// The short strings a conversion made, for equal ones met later to share (a JavaScript
/// string cannot change, and equal strings cannot be told apart, so sharing is invisible to
/// the program): each takes its own block in the engine, several times the bytes of its
/// text, and a result that repeats a status or a tag would otherwise hold it once per use.
///
/// A table of `1 << SHARED_SLOT_BITS` slots indexed by the text's hash. A text is kept
/// the second time its hash is met in its slot, so a result without repeats (every text its
/// own) only writes a hash per string: nothing it made is held past its use, where freeing
/// it later would cost a cache miss.
#[derive(Default)]
struct SharedStrings<'js> {
    /// Short strings met so far.
    met: usize,
    /// Empty until [`STRINGS_BEFORE_SHARING`] short strings were met.
    slots: Vec<SharedSlot<'js>>,
}

#[derive(Default)]
struct SharedSlot<'js> {
    /// The hash of the last text met here.
    hash: u64,
    /// A text met twice here, and the string made for it.
    kept: Option<(String, rquickjs::String<'js>)>,
}

impl<'js> SharedStrings<'js> {
    /// The JavaScript string `text`: the one made earlier for the same text when the
    /// table keeps it, or else a new one.
    fn get(&mut self, ctx: &Ctx<'js>, text: String) -> rquickjs::Result<rquickjs::String<'js>> {
        if text.len() > SHARED_STRING_BYTES {
            return rquickjs::String::from_str(ctx.clone(), &text);
        }
        self.met += 1;
        if self.slots.is_empty() {
            if self.met < STRINGS_BEFORE_SHARING {
                return rquickjs::String::from_str(ctx.clone(), &text);
            }
            self.slots = (0..1usize << SHARED_SLOT_BITS)
                .map(|_| SharedSlot::default())
                .collect();
        }
        let hash = short_hash(text.as_bytes());
        // The hash's high bits are its best mixed.
        let slot = &mut self.slots[(hash >> (64 - SHARED_SLOT_BITS)) as usize];
        if let Some((kept, made)) = &slot.kept
            && *kept == text
        {
            return Ok(made.clone());
        }
        let made = rquickjs::String::from_str(ctx.clone(), &text)?;
        if slot.hash == hash {
            slot.kept = Some((text, made.clone()));
        } else {
            slot.hash = hash;
        }
        Ok(made)
    }
}

/// A hash of at most [`SHARED_STRING_BYTES`] bytes from their first and last eight and
/// their length (multiplied as FxHash does): no loop over the bytes.
fn short_hash(bytes: &[u8]) -> u64 {
    let n = bytes.len();
    let word = |b: &[u8]| {
        let mut w = [0u8; 8];
        w[..b.len()].copy_from_slice(b);
        u64::from_le_bytes(w)
    };
    let (head, tail) = if n >= 8 {
        (word(&bytes[..8]), word(&bytes[n - 8..]))
    } else {
        (word(bytes), 0)
    };
    let mixed = (head ^ (n as u64).rotate_left(56)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    (mixed.rotate_left(5) ^ tail).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95)
}

impl<'js> ToJs<'_, 'js> {
    fn convert(&mut self, value: serde_json::Value) -> rquickjs::Result<Value<'js>> {
        let ctx = self.ctx;
        Ok(match value {
            serde_json::Value::Null => Value::new_null(ctx.clone()),
            serde_json::Value::Bool(b) => Value::new_bool(ctx.clone(), b),
            serde_json::Value::Number(n) => number_to_js(ctx, self.prim, &n)?,
            serde_json::Value::String(s) => self.strings.get(ctx, s)?.into_value(),
            serde_json::Value::Array(_) | serde_json::Value::Object(_)
                if super::stack::too_low_to_convert() =>
            {
                return Err(rquickjs::Exception::throw_range(
                    ctx,
                    "Maximum call stack size exceeded (converting a tool's result)",
                ));
            }
            serde_json::Value::Array(items) => {
                let array = Array::new(ctx.clone())?;
                let fast = items.len() >= FAST_ARRAY && self.indices_safe()?;
                for (i, item) in items.into_iter().enumerate() {
                    let v = self.convert(item)?;
                    if fast {
                        array.set(i, v)?;
                    } else {
                        array.as_object().prop(
                            i as u32,
                            Property::from(v).writable().enumerable().configurable(),
                        )?;
                    }
                }
                array.into_value()
            }
            serde_json::Value::Object(map) => {
                let obj = Object::new(ctx.clone())?;
                for (k, item) in map {
                    let v = self.convert(item)?;
                    let (atom, settable) = match self.atoms.get(k.as_str()) {
                        Some(entry) => entry.clone(),
                        None => {
                            let atom = Atom::from_str(ctx.clone(), &k)?;
                            let settable = k != "__proto__"
                                && !self.prim.object_prototype().contains_key(atom.clone())?;
                            self.atoms.insert(k, (atom.clone(), settable));
                            (atom, settable)
                        }
                    };
                    if settable {
                        obj.set(atom, v)?;
                    } else {
                        obj.prop(
                            atom,
                            Property::from(v).writable().enumerable().configurable(),
                        )?;
                    }
                }
                obj.into_value()
            }
        })
    }

    fn indices_safe(&mut self) -> rquickjs::Result<bool> {
        if let Some(safe) = self.indices_safe {
            return Ok(safe);
        }
        let mut safe = true;
        for proto in [self.prim.array_prototype(), self.prim.object_prototype()] {
            for key in proto.own_keys::<Atom<'js>>(Filter::new().string()) {
                let key = key?
                    .to_js_string()
                    .and_then(|k| k.to_string())
                    .unwrap_or_default();
                if key.parse::<u32>().is_ok() {
                    safe = false;
                }
            }
        }
        self.indices_safe = Some(safe);
        Ok(safe)
    }
}

fn number_to_js<'js>(
    ctx: &Ctx<'js>,
    prim: &Primordials<'js>,
    n: &Number,
) -> rquickjs::Result<Value<'js>> {
    let text = n.as_str();
    if text.contains(['.', 'e', 'E']) {
        return Ok(Value::new_float(
            ctx.clone(),
            text.parse::<f64>().unwrap_or(f64::NAN),
        ));
    }
    if text == "-0" {
        return Ok(Value::new_float(ctx.clone(), -0.0));
    }
    if let Ok(i) = text.parse::<i64>() {
        if (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&i) {
            return Ok(match i32::try_from(i) {
                Ok(small) => Value::new_int(ctx.clone(), small),
                Err(_) => Value::new_float(ctx.clone(), i as f64),
            });
        }
        return Ok(BigInt::from_i64(ctx.clone(), i)?.into_value());
    }
    if let Ok(u) = text.parse::<u64>() {
        return Ok(BigInt::from_u64(ctx.clone(), u)?.into_value());
    }
    prim.floor.guard(ctx)?;
    prim.get::<Function<'js>>("BigInt")?.call((text,))
}
