"""A German real-estate question set in the shape of ImmoNow (seed 000): exposés, and questions about them.

Exposés are generated from a seed: each names its address, and states rent, deposit, size, rooms, year
built, heating, energy class, availability, pets, parking and the agent, each in one of several phrasings
(so no two exposés read alike and the questions do not copy the text). Questions are asked the way a tenant
asks them ("Wie hoch ist die Miete der Wohnung in der Lindenstraße 12?"). Three kinds:

* ``answerable``: about an exposé that is indexed;
* ``near``: the same kind of question about an exposé that is *not* indexed (another address) — the index
  holds many look-alikes, so only the address tells them apart;
* ``off``: questions a real-estate assistant gets that no exposé answers (taxes, law, general knowledge).

Splits by exposé / question id hash: a third "train" (choose settings on it), the rest "test". Nothing here is
copied from anywhere; the generator is the data.

    python -m scripts.evalsets.immo_de --exposes 40     # print a sample exposé and the counts
"""

from __future__ import annotations

import hashlib
import random
import sys
from dataclasses import dataclass

STREETS = ("Lindenstraße", "Birkenallee", "Am Mühlbach", "Hauptstraße", "Schillerplatz", "Rosenweg", "Kastanienallee",
           "Bahnhofstraße", "Goethestraße", "Am Stadtpark", "Eichendorffweg", "Marktgasse", "Uferstraße", "Talweg",
           "Bergstraße", "Gartenstraße", "Wiesenweg", "Kirchplatz", "Fliederweg", "Hafenstraße", "Ahornring",
           "Lessingstraße", "Mozartweg", "Sonnenhang", "Feldstraße", "Brunnenstraße", "Weidenweg", "Schlossallee")
CITIES = ("Leipzig", "Freiburg", "Kassel", "Münster", "Regensburg", "Bielefeld", "Potsdam", "Würzburg", "Lübeck",
          "Augsburg", "Erfurt", "Kiel", "Mainz", "Ulm", "Bamberg", "Göttingen")
KINDS = (("Wohnung", "die Wohnung"), ("Dachgeschosswohnung", "die Dachgeschosswohnung"),
         ("Einfamilienhaus", "das Haus"), ("Reihenhaus", "das Reihenhaus"), ("Altbauwohnung", "die Altbauwohnung"),
         ("Maisonettewohnung", "die Maisonette"))
HEATING = ("Gas-Zentralheizung", "Fernwärme", "Wärmepumpe mit Fußbodenheizung", "Pelletheizung",
           "Gasetagenheizung")
AGENTS = ("Frau Keller", "Herr Brandt", "Frau Yilmaz", "Herr Nowak", "Frau Schubert", "Herr Lindqvist")


@dataclass(frozen=True)
class Question:
    """A question, the exposé that answers it (None: none does), its kind and split."""

    id: str
    text: str
    gold: str | None
    kind: str  # "answerable" | "near" | "off"
    split: str


def split_of(key: str) -> str:
    return "train" if int(hashlib.sha256(key.encode()).hexdigest(), 16) % 3 == 0 else "test"


def _expose(rng: random.Random, street: str, number: int, city: str) -> tuple[str, dict[str, str]]:
    kind, the = rng.choice(KINDS)
    rooms = rng.choice((1, 2, 2, 3, 3, 4, 5))
    area = rng.randint(28 + 12 * rooms, 40 + 22 * rooms)
    rent = round(area * rng.uniform(8.5, 17.5) / 10) * 10
    extra = round(area * rng.uniform(1.8, 3.6) / 5) * 5
    deposit = rent * rng.choice((2, 3))
    year = rng.choice((1898, 1911, 1928, 1956, 1964, 1972, 1985, 1994, 2003, 2012, 2019, 2022))
    heating = rng.choice(HEATING)
    energy = rng.choice("ABCDEFG")
    month = rng.choice(("1. März", "1. April", "15. Mai", "1. Juli", "1. September", "sofort"))
    pets = rng.choice((True, False))
    parking = rng.choice(("ein Tiefgaragenstellplatz für 80 € im Monat", "ein Außenstellplatz für 35 € monatlich",
                          "kein Stellplatz; Anwohnerparken ist möglich"))
    agent = rng.choice(AGENTS)
    address = f"{street} {number}, {city}"
    sentences = [
        rng.choice((f"{kind} in der {street} {number} in {city}", f"Exposé: {kind}, {address}",
                    f"Zur Miete: {kind} – {address}")),
        rng.choice((f"Die Kaltmiete beträgt {rent} €, dazu kommen {extra} € Nebenkosten.",
                    f"Monatliche Miete: {rent} € kalt zuzüglich {extra} € Betriebskostenvorauszahlung.",
                    f"Für {the} werden {rent} € Grundmiete verlangt; die Nebenkosten liegen bei {extra} €.")),
        rng.choice((f"Die Kaution beläuft sich auf {deposit} €.",
                    f"Als Mietsicherheit sind {deposit} € zu hinterlegen.",
                    f"Es wird eine Kaution von {deposit} € fällig.")),
        rng.choice((f"Auf {area} m² verteilen sich {rooms} Zimmer.",
                    f"{the[:1].upper()}{the[1:]} hat {rooms} Zimmer und "
                    f"{area} Quadratmeter Wohnfläche.", f"Wohnfläche: {area} m², Zimmer: {rooms}.")),
        rng.choice((f"Das Gebäude wurde {year} errichtet.", f"Baujahr des Hauses ist {year}.",
                    f"Das Objekt stammt aus dem Jahr {year}.")),
        rng.choice((f"Beheizt wird mit {heating}.", f"Heizung: {heating}.", f"Die Wärme liefert eine {heating}."
                    if not heating.startswith("Fern") else "Die Wärme kommt aus dem Fernwärmenetz der Stadtwerke.")),
        rng.choice((f"Laut Energieausweis gilt die Effizienzklasse {energy}.", f"Energieeffizienzklasse {energy}.")),
        rng.choice((f"Bezugsfrei ab {month}.", f"{the[:1].upper()}{the[1:]} ist ab {month} verfügbar.",
                    f"Einzug ist ab {month} möglich.")),
        ("Haustiere sind nach Absprache erlaubt." if pets else "Haustiere sind leider nicht gestattet."),
        f"Zum Objekt gehört {parking}." if not parking.startswith("kein") else f"Es gibt {parking}.",
        rng.choice((f"Ansprechpartner ist {agent} von ImmoNow.",
                    f"Besichtigungen vereinbaren Sie mit {agent.replace('Herr ', 'Herrn ')}.")),
    ]
    facts = {"address": f"{street} {number}", "in_address": f"{_preposition(street)} {street} {number}".replace(
        " Am ", " "), "city": city, "the": the}
    paragraphs = [sentences[0], " ".join(sentences[1:4]), " ".join(sentences[4:8]), " ".join(sentences[8:])]
    return "\n\n".join(paragraphs), facts


def _preposition(street: str) -> str:
    if street.startswith("Am "):
        return "am"
    if street.endswith(("weg", "ring", "hang")):
        return "im"
    return "am" if street.endswith("platz") else "in der"


_ASK = (
    "Wie hoch ist die Miete für {the} {in_address}?",
    "Was kostet {the} {in_address} im Monat an Nebenkosten?",
    "Wie viel Kaution muss ich für {the} {in_address} in {city} zahlen?",
    "Wie groß ist {the} {in_address}?",
    "Wie viele Zimmer hat {the} {in_address}?",
    "Aus welchem Jahr stammt das Haus {in_address}?",
    "Wie wird {the} {in_address} beheizt?",
    "Welche Energieeffizienzklasse hat das Objekt {address} in {city}?",
    "Ab wann kann ich {in_address} einziehen?",
    "Darf ich {in_address} einen Hund halten?",
    "Gibt es {in_address} einen Parkplatz?",
    "Wer ist der Ansprechpartner für das Objekt {address}?",
)
OFF_TOPIC = (
    "Wie hoch ist die Grunderwerbsteuer in Bayern?", "Was regelt die Mietpreisbremse?",
    "Wie kündige ich meinen Stromvertrag?", "Wer zahlt die Maklerprovision beim Hauskauf?",
    "Welche Unterlagen brauche ich für einen Bausparvertrag?", "Wie beantrage ich Wohngeld?",
    "Wann muss der Vermieter die Nebenkostenabrechnung schicken?", "Was ist ein Erbbaurecht?",
    "Wie hoch sind die Bauzinsen gerade?", "Welche Versicherung brauche ich als Mieter?",
    "Wer hat die Relativitätstheorie entwickelt?", "Wie lange muss man Spaghetti kochen?",
    "Was ist die Hauptstadt von Australien?", "Wie viele Einwohner hat Hamburg?",
    "Wann beginnt die Fußball-Bundesliga?", "Wie funktioniert eine Photovoltaikanlage?",
    "Welche Zutaten braucht man für einen Käsekuchen?", "Wie schreibe ich eine Bewerbung?",
    "Wer war der erste Bundeskanzler?", "Wie wird das Wetter morgen in Berlin?",
    "Wie entferne ich Schimmel im Badezimmer?", "Wie setze ich eine Steuererklärung auf?",
    "Was kostet ein Umzugsunternehmen?", "Welche Pflanzen eignen sich für einen Balkon im Schatten?",
    "Wie lange dauert ein Flug nach New York?", "Wie melde ich einen Wohnsitz beim Bürgeramt an?",
    "Was ist der Unterschied zwischen Eigentum und Besitz?", "Wie oft muss ein Schornstein gefegt werden?",
    "Welche Rechte habe ich bei einer Eigenbedarfskündigung?", "Wie berechnet man die Grundsteuer?",
)


def load(exposes: int = 40, held_out: int = 20, seed: int = 7) -> tuple[dict[str, str], list[Question]]:
    """``exposes`` indexed exposés and ``held_out`` more that are asked about but not indexed."""
    rng = random.Random(seed)
    addresses = [(s, n, c) for s in STREETS for n in range(1, 60) for c in CITIES]
    chosen = rng.sample(addresses, exposes + held_out)
    corpus: dict[str, str] = {}
    questions: list[Question] = []
    for i, (street, number, city) in enumerate(chosen):
        doc_id = f"expose-{i:04d}"
        text, facts = _expose(rng, street, number, city)
        indexed = i < exposes
        if indexed:
            corpus[doc_id] = text
        for j in rng.sample(range(len(_ASK)), 3):
            qid = f"{doc_id}-q{j}"
            questions.append(Question(qid, _ASK[j].format(**facts), doc_id if indexed else None,
                                      "answerable" if indexed else "near", split_of(doc_id)))
    for k, text in enumerate(OFF_TOPIC):
        questions.append(Question(f"off-{k:02d}", text, None, "off", split_of(f"off-{k:02d}")))
    return corpus, questions


if __name__ == "__main__":
    n = int(sys.argv[sys.argv.index("--exposes") + 1]) if "--exposes" in sys.argv else 40
    corpus, questions = load(n)
    print(next(iter(corpus.values())), "\n")
    for kind in ("answerable", "near", "off"):
        print(kind, sum(q.kind == kind for q in questions), [q.text for q in questions if q.kind == kind][:2])
