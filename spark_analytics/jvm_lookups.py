"""py4j's reflection lookups, remembered for the JVM's life.

PySpark finds `org.apache.spark.sql.functions`, and then the function in it, by a round trip to the JVM each on
every call of a `pyspark.sql.functions` function: `F.col("x")` is three round trips where one calls it, and every
Python list handed to the JVM first finds `java.util.ArrayList` the same way (py4j remembers the methods of an
object, not of a class or package). The audit builds its plans from tens of thousands of such calls: a small audit
spent more of its driver time in these lookups and their replies than in Spark's planning (benchmarks/README.md,
"fifteenth session"). A class, a package or a static method that the JVM found once is found again for as long as
it runs, so each lookup object keeps what it found; static fields are read every time (they may change).
"""

from __future__ import annotations

from typing import Any

_INSTALLED = "_binlogd_lookups_kept"


def keep_lookups() -> None:
    """Make py4j's JVMView, JavaPackage and JavaClass keep the packages, classes and static methods they look up
    (on the instance: the next lookup of the name is an attribute read, no round trip). Once per process."""
    from py4j import java_gateway as jg

    if getattr(jg, _INSTALLED, False):
        return
    stable = (jg.JavaPackage, jg.JavaClass, jg.JavaMember)
    for cls in (jg.JVMView, jg.JavaPackage, jg.JavaClass):
        cls.__getattr__ = _keeping(cls.__getattr__, stable)  # type: ignore[method-assign]
    setattr(jg, _INSTALLED, True)


def _keeping(lookup: Any, stable: tuple[type, ...]) -> Any:
    def kept(self: Any, name: str) -> Any:
        found = lookup(self, name)
        if isinstance(found, stable):
            self.__dict__[name] = found  # __getattr__ runs only when the attribute is not found: not again
        return found

    kept.__doc__ = lookup.__doc__
    return kept
