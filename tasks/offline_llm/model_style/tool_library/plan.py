"""The tool library's plan, as the model answers the planning prompt."""

from envmill.tasks.offline_llm.model_style.planning import entity

PLAN = {
    "environment": "Neighbourhood tool library",
    "category": "tool library",
    "class_name": "ToolLendingLibrary",
    "introduction": (
        "A neighbourhood tool library lends drills, ladders, garden and cleaning tools to its "
        "members. Volunteers at the counter use it to sign members up, check tools out and in, "
        "renew loans, keep a waiting list for tools that are out, collect late fees and send worn "
        "tools for repair. It enforces membership limits, due dates and late fees, the waiting "
        "list and the tools' condition."
    ),
    "entities": [
        entity(
            "member",
            "A neighbour who has joined the library.",
            ("member_id", "str", "Unique member id, e.g. 'MB-0012'."),
            ("full_name", "str", "The member's name."),
            ("email", "str", "Email address, unique per member."),
            ("phone", "str", "Contact phone number."),
            ("tier", "enum: basic | plus", "Membership tier; plus members borrow more."),
            ("status", "enum: active | suspended", "Whether the member may borrow."),
            ("late_fees_owed", "float", "Unpaid late fees in dollars."),
            ("joined_on", "date", "The day the member signed up."),
        ),
        entity(
            "tool",
            "One lendable tool in the catalogue.",
            ("tool_id", "str", "Unique tool id, e.g. 'TL-0031'."),
            ("name", "str", "What the tool is, e.g. 'Cordless drill'."),
            ("category", "enum: power | hand | garden | ladders | cleaning", "Catalogue section."),
            ("condition", "enum: good | worn | needs_repair", "State of the tool."),
            ("deposit", "float", "Refundable deposit in dollars."),
            ("status", "enum: available | on_loan | in_repair | retired", "Where it is."),
        ),
        entity(
            "loan",
            "A tool lent to a member.",
            ("loan_id", "str", "Unique loan id, e.g. 'LN-0040'."),
            ("member_id", "str", "The borrower."),
            ("tool_id", "str", "The tool lent."),
            ("borrowed_on", "date", "Day the tool went out."),
            ("due_on", "date", "Day it is due back."),
            ("returned_on", "date", "Day it came back; empty while out."),
            ("renewals", "int", "How many times the loan was renewed."),
            ("late_fee", "float", "Fee charged on return for late days."),
            ("status", "enum: active | returned", "Whether the tool is still out."),
        ),
        entity(
            "reservation",
            "A member's place on the waiting list for a tool that is out.",
            ("reservation_id", "str", "Unique reservation id, e.g. 'RS-0007'."),
            ("member_id", "str", "The member waiting."),
            ("tool_id", "str", "The tool they wait for."),
            ("created_at", "datetime", "When they joined the list."),
            ("status", "enum: waiting | fulfilled | cancelled", "Where the reservation stands."),
        ),
    ],
    "business_rules": [
        "Only active members may borrow or reserve tools.",
        "A basic member holds at most 2 active loans at a time, a plus member at most 5.",
        "A member who owes 20.00 or more in late fees cannot borrow until they pay.",
        "Only available tools can be checked out; a tool someone is waiting for goes to the "
        "first member on its waiting list.",
        "A loan lasts 7 days and can be renewed once, for another 7 days, only while it is not "
        "overdue and nobody is waiting for the tool.",
        "A tool returned after its due date costs 2.50 per late day, added to the member's late "
        "fees.",
        "A tool returned as needs_repair goes to repair; otherwise it is available again.",
        "Tools can be reserved only while they are out (on loan or in repair); a member holds at "
        "most one waiting reservation per tool.",
        "Payments are positive and at most what the member owes.",
        "Only available tools can be sent for repair.",
    ],
}
