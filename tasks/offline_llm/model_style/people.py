"""The people, places and numbering a model invents for a state: its own name lists (not
Faker's), drawn without repeats from a seed, so each scenario's state has other people in it."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

FIRST = (
    "Maria Amara Daniel Priya Tomasz Leila Kenji Grace Omar Sofia Mateo Hannah Ibrahim Chloe "
    "Nikhil Rosa Samuel Ingrid Tariq Eleanor Kwame Yuki Felipe Aisha Lucas Mei Viktor Nadia "
    "Oscar Fatima Hugo Zara Andre Lena Rafael Imani Jonas Carmen Elias Noor Theo Bianca Dev "
    "Marisol Patrick Anika Joel Simone"
).split()
LAST = (
    "Gonzalez Okafor Raman Kowalski Haddad Tanaka Mensah Rossi Petrov Liu Farouk Schultz "
    "Adeyemi Novak Bergstrom Delgado Nakamura Osei Fischer Moreau Castillo Lindqvist Iyer "
    "Brennan Achebe Sato Whitfield Kaur Dubois Romero Hoffman Quinn Mwangi Jensen Varga "
    "Ortega Nilsen Chowdhury Baptiste Keller"
).split()
CITIES = (
    "Riverton",
    "Oak Falls",
    "Millbrook",
    "Eastport",
    "Cedar Grove",
    "Linden",
    "Harbor View",
    "Westfield",
)


@dataclass
class Inventor:
    """A seeded source of names, cities and phone numbers that never repeats a full name."""

    seed: int
    used: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def name(self) -> str:
        while True:
            full = f"{self.rng.choice(FIRST)} {self.rng.choice(LAST)}"
            if full not in self.used:
                self.used.add(full)
                return full

    def city(self) -> str:
        return self.rng.choice(CITIES)

    def phone(self) -> str:
        return f"+1-555-{self.rng.randrange(100, 1000):03d}{self.rng.randrange(10)}"

    def choice(self, options: tuple | list) -> object:
        return self.rng.choice(options)

    def between(self, low: int, high: int) -> int:
        return self.rng.randint(low, high)


def numbered(prefix: str, first: int, count: int, width: int = 4) -> list[str]:
    """``count`` ids from ``first`` on: ``DN-0101``, ``DN-0102``, …"""
    return [f"{prefix}-{number:0{width}d}" for number in range(first, first + count)]


def first_number(scenario: int) -> int:
    """Where a state's ids start: 1 for the environment's own state, then a block per scenario,
    so no scenario reuses another's ids."""
    return 1 if scenario < 0 else 100 * (scenario + 1) + 1
